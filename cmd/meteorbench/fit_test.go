package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// Bad input to fit and run --mix: one line, exit 2, nothing measured.
func TestFitBadFlags(t *testing.T) {
	fit := fixtures + "fit.json"
	wantUsageErrors(t, []string{"fit"}, [][]string{
		{"--traffic", "small=10"},
		{"--tier", "1cpu"},
		{"--tier", "fast", "--traffic", "small=10"},
		{"--tier", "1cpu/3gb/4gb", "--traffic", "small=10"},
		{"--tier", "1cpu", "--traffic", "huge=10"},
		{"--tier", "1cpu", "--traffic", "small=0"},
		{"--tier", "1cpu", "--traffic", "small=-5"},
		{"--tier", "1cpu", "--traffic", "small=10,small=20"},
		{"--tier", "1cpu", "--traffic", "small=10", "--headroom", "0%"},
		{"--tier", "1cpu", "--traffic", "small=10", "--headroom", "120%"},
		{"--tier", "1cpu", "--traffic", "small=10", "--tiers", "1cpu,nope"},
		{"--tier", "1cpu", "--traffic", "small=10", "--scenario", "large"},
		{"--tier", "1cpu", "--traffic", "small=10", "--link", "vps"},
		{"--tier", "1cpu", "--traffic", "small=10,large=5", "--from", fit},            // the fixture has no large cells
		{"--tier", "1cpu", "--traffic", "small=10", "--from", fixtures + "nope.json"}, // no such file
		{"--tier", "1cpu", "--traffic", "small=10", "extra"},
		{"--tier", "1cpu", "--traffic", "small=10", "--concurrency", "4,8", "--target", "127.0.0.1:1"},
		{"--tier", "1cpu", "--traffic", "small=10", "--json-codec", "std,v2", "--target", "127.0.0.1:1"},
	})
	for _, mix := range []string{"huge=1", "small=0", "small", "small=1,small=2"} {
		wantUsageError(t, "run", "--target", "127.0.0.1:1", "--mix", mix)
	}
	wantUsageError(t, "run", "--target", "127.0.0.1:1", "--mix", "small=1", "--rate", "5")
}

// fit --from answers from an earlier run's cells, without measuring: the
// document keeps them and gains the answer.
func TestFitFrom(t *testing.T) {
	out, _, err := execute(t, "fit", "--tier", "2cpu/200mbit", "--traffic", "small=400,post=10", "--tiers", "1cpu/10mbit,2cpu/200mbit",
		"--from", fixtures+"fit.json", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var r results.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.FitPlan == nil || len(r.Fit) != 2 || len(r.Cells) == 0 || !strings.HasPrefix(r.FitPlan.Source, "from ") {
		t.Fatalf("fit plan %+v, %d fits, %d cells", r.FitPlan, len(r.Fit), len(r.Cells))
	}
	for _, f := range r.Fit {
		if !f.Fits || f.SmallestTier != "2cpu/200mbit" || f.Verdict == "" || f.Utilisation[results.ResourceLinkSent] <= 0 {
			t.Errorf("%s: %+v", f.Protocol, f)
		}
	}
}

// fit measures the traffic against a target (the real server, in-process,
// 127.0.0.1) as a mix cell per protocol, and answers from those cells.
func TestFitMeasures(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	out, _, err := execute(t, "fit", "--target", addr, "--tier", "1cpu/100mbit", "--traffic", "small=50,large=2",
		"--repeat", "1", "--duration", "500ms", "--warmup", "100ms", "--format", "json", "-q")
	if err != nil {
		t.Fatal(err)
	}
	var r results.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.FitPlan == nil || r.FitPlan.Source != "measured" || len(r.Fit) != 2 || len(r.Cells) != 2 {
		t.Fatalf("fit plan %+v, %d fits, %d cells", r.FitPlan, len(r.Fit), len(r.Cells))
	}
	for _, c := range r.Cells {
		if c.Scenario != results.MixScenario || c.Condition.Link == "" || len(c.Mix) != 2 {
			t.Errorf("cell %s: not the traffic's mix over the tier's link", c.Key())
		}
	}
	for _, f := range r.Fit {
		if f.CPUCores <= 0 || f.LinkMbit.Received <= 0 || f.MaxScale <= 0 || f.Verdict == "" {
			t.Errorf("%s: %+v", f.Protocol, f)
		}
	}
}
