package session_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/target"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/summary"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/timing"
)

// A mix below saturation: the real server on 127.0.0.1, small, large and
// post at once over each protocol's shared connections, one cell per
// protocol. Each scenario's achieved rate is within 2% of its offered
// rate, every call succeeds, and the cell's own figures are all of them.
func TestMixKeepsEachScenarioRate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a 2 s mix per protocol for rate figures (cmd's TestFitMeasures runs a mix under the race detector); runs in the normal step")
	}
	addr := servertest.Start(t, server.Config{})
	mix, err := results.ParseMix("small=300,large=10,post=5")
	if err != nil {
		t.Fatal(err)
	}
	cfg := plan.Config{
		Target:      target.One(addr),
		Protocols:   []api.Protocol{api.REST, api.GRPC},
		Mix:         mix,
		Batches:     []int{1},
		Concurrency: []int{16},
		Duration:    2 * time.Second,
		Warmup:      300 * time.Millisecond,
	}
	// The rates depend on the machine's timing: retried, each attempt's
	// figures logged. What does not (the cells' shape, errors, the calls
	// adding up) is checked on t.
	timing.Retry(t, timing.Attempts, func(attempt int) (misses []string) {
		res := run(t, cfg)
		if len(res.Cells) != 2 {
			t.Fatalf("%d cells, want one per protocol", len(res.Cells))
		}
		for _, c := range res.Cells {
			if c.Scenario != results.MixScenario || c.Mix == nil || c.Condition.Mix != mix.String() || c.RateRequested != mix.Total() {
				t.Fatalf("%s: scenario %q, mix %q, rate %v: not a mix cell", c.Key(), c.Scenario, c.Condition.Mix, c.RateRequested)
			}
			if c.Errors != 0 {
				t.Errorf("%s: %d errors (%v)", c.Key(), c.Errors, c.ErrorExamples)
			}
			var calls int64
			for i, s := range c.Mix {
				t.Logf("timing: attempt %d, %s %s: offered %.1f, achieved %.2f calls/s (%d calls in %.3f s), p50 %s, p99 %s", attempt, c.Protocol, s.Scenario,
					s.OfferedRate, s.AchievedRate, s.Calls+s.Errors, c.DurationS, format.US(s.LatencyUS.P50), format.US(s.LatencyUS.P99))
				if s.Scenario != mix[i].Scenario || s.OfferedRate != mix[i].Rate {
					t.Errorf("%s: part %d is %s at %v, want %s at %v", c.Key(), i, s.Scenario, s.OfferedRate, mix[i].Scenario, mix[i].Rate)
				}
				if d := math.Abs(s.AchievedRate-s.OfferedRate) / s.OfferedRate; d > summary.MixShortfall {
					misses = append(misses, fmt.Sprintf("%s %s: achieved %.2f of %.1f calls/s (%.1f%% off, want within %.0f%%)", c.Protocol, s.Scenario, s.AchievedRate, s.OfferedRate, 100*d, 100*summary.MixShortfall))
				}
				if s.LatencyUS.P50 <= 0 {
					t.Errorf("%s %s: no latency", c.Protocol, s.Scenario)
				}
				calls += s.Calls
			}
			if calls != c.Calls {
				t.Errorf("%s: the scenarios made %d calls, the cell %d", c.Key(), calls, c.Calls)
			}
		}
		return misses
	})
}

func TestMixRefused(t *testing.T) {
	mix, _ := results.ParseMix("small=10")
	for name, cfg := range map[string]plan.Config{
		"scenarios":  {Target: target.One("x:1"), Mix: mix, Scenarios: []api.Scenario{api.Large}},
		"rate":       {Target: target.One("x:1"), Mix: mix, Rate: 20},
		"iterations": {Target: target.One("x:1"), Mix: mix, Iterations: 3},
		"no mix":     {Target: target.One("x:1"), Scenarios: []api.Scenario{results.MixScenario}},
	} {
		if err := cfg.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
