package fit

import (
	"fmt"
	"strings"
	"testing"

	loadplan "github.com/meteorbench/meteorbench/internal/loadgen/plan"
)

// ParseOptions names the flag at fault; a good question keeps every part.
func TestParseOptions(t *testing.T) {
	good := Flags{Tier: "1cpu/100mbit", Traffic: "small=800,large=20", Headroom: "70%", Tiers: "1cpu,2cpu", SameHost: true, Verify: true}
	o, err := ParseOptions(good)
	if err != nil || o.Plan.Tier.CPUs != 1 || o.Plan.Traffic.Total() != 820 || o.Plan.Headroom != 0.7 ||
		len(o.Plan.Tiers) != 2 || !o.Plan.SameHost || !o.Verify {
		t.Fatalf("%+v, %v", o, err)
	}
	for want, f := range map[string]Flags{
		"give --tier and --traffic (e.g. --tier 1cpu/100mbit --traffic small=800,large=20)": {Traffic: "small=1", Headroom: "70%"},
		"--tier: ":    {Tier: "fast", Traffic: "small=1", Headroom: "70%"},
		"--traffic: ": {Tier: "1cpu", Traffic: "huge=1", Headroom: "70%"},
		"--headroom ": {Tier: "1cpu", Traffic: "small=1", Headroom: "120%"},
		"--tiers: ":   {Tier: "1cpu", Traffic: "small=1", Headroom: "70%", Tiers: "1cpu,nope"},
	} {
		if _, err := ParseOptions(f); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%+v: error %v, want it to start with %q", f, err, want)
		}
	}
}

// A fit answers for one condition; --concurrency is its one worker count.
func TestOneCondition(t *testing.T) {
	for _, c := range []struct {
		cfg   loadplan.Config
		given bool
		want  string // the error, "<nil>" for none
	}{
		{loadplan.Config{Concurrency: []int{1}}, false, "<nil>"},
		{loadplan.Config{Concurrency: []int{8}}, true, "<nil>"},
		{loadplan.Config{Concurrency: []int{4, 8}}, true, "--concurrency: give one worker count (or none: it follows the traffic)"},
		{loadplan.Config{Compress: []string{"none", "gzip"}}, false, "fit answers for one condition: give one value of --compress, --json-codec, --tls and --records"},
		{loadplan.Config{Records: []int{1, 10}}, false, "fit answers for one condition: give one value of --compress, --json-codec, --tls and --records"},
	} {
		var o Options
		if err := o.OneCondition(c.cfg, c.given); fmt.Sprint(err) != c.want {
			t.Errorf("%+v: %v, want %s", c.cfg, err, c.want)
		}
		if c.want == "<nil>" && c.given && o.Workers != c.cfg.Concurrency[0] {
			t.Errorf("%+v: workers %d", c.cfg, o.Workers)
		}
	}
}
