package session

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/target"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/testmode"
	"github.com/meteorbench/meteorbench/internal/timing"
)

// At an easy rate against the real server, the open-loop harness must not
// add a scheduling delay of its own that it does not measure: the latency
// from the intended start (corrected) is about the latency from the send
// (uncorrected), and almost no call starts late.
//
// Timing-dependent, like the link physics, relay, HTTP/2 heap-bound and
// capacity ±10% tests: through timing.Retry, three attempts, each one's
// figures logged. Robust on a noisy 2-core machine: the rate (200 small
// calls/s over two workers, REST and gRPC) is a few percent of capacity;
// "late" allows 1% of the calls or twice the share of waits the machine
// itself wakes more than LateThreshold late (a control making the same
// waits, 1 ms apart, in this process during the run: a busy or stolen CPU
// does that to any process, and the old timer-based dispatcher made 10-20%
// of calls late). On a machine so busy that the control's waits wake
// milliseconds late, it skips with that reason (timing.Skip), which CI's
// log shows. CI runs it alone (TestTiming*): beside the normal step's other
// lanes, with the control measured after the run instead of during it, it
// missed all three attempts (7-93 of 400 calls late against a control that
// saw 0.0-0.2%).
func TestTimingOpenLoopPrecision(t *testing.T) {
	testmode.SkipShort(t, "2 s of paced load for a timing claim; runs in CI's timing step (TestTiming*), alone")
	if testmode.Race {
		t.Skip("timing against physics: the race detector slows the load generator several times over")
	}
	// The load generator as `run` runs it: its garbage collector at
	// GeneratorGOGC. With the default, on this test process's heap (the
	// package's other tests ran first), a collection's mark phase takes
	// one of the two processors for its length.
	defer debug.SetGCPercent(debug.SetGCPercent(plan.GeneratorGOGC))
	addr := servertest.Start(t, server.Config{})
	cfg := plan.Config{
		Target:      target.One(addr),
		Protocols:   []api.Protocol{api.REST, api.GRPC},
		Scenarios:   []api.Scenario{api.Small},
		Batches:     []int{1},
		Concurrency: []int{2},
		Duration:    2 * time.Second,
		Warmup:      200 * time.Millisecond,
		Rate:        200,
	}
	timing.Retry(t, 3, func(attempt int) []string {
		// The control waits while the load runs, so that it sees what the
		// machine does to the generator then (another job on its cores).
		ctx, stop := context.WithCancel(context.Background())
		control := make(chan []time.Duration, 1)
		go func() { control <- engine.MeasureScheduling(ctx, int((cfg.Warmup+cfg.Duration)/time.Millisecond)) }()
		res, err := Run(context.Background(), cfg)
		stop()
		idle := <-control
		if err != nil {
			t.Fatal(err)
		}
		// One cell per protocol asked: with none, the checks below would
		// compare nothing and pass.
		var got []api.Protocol
		for _, c := range res.Cells {
			got = append(got, c.Protocol)
		}
		if len(got) != len(cfg.Protocols) || !slices.Contains(got, api.REST) || !slices.Contains(got, api.GRPC) {
			t.Fatalf("cells of %v, want one of each of %v", got, cfg.Protocols)
		}
		noise := lateShare(idle)
		var problems []string
		for _, c := range res.Cells {
			var wake, handoff float64
			if g := c.GeneratorDelayUS; g != nil && g.Handoff != nil {
				wake, handoff = g.Wake.P50, g.Handoff.P50
			}
			t.Logf("attempt %d, %s: corrected p50 %.0f µs, uncorrected %.0f µs (generator wake-up p50 %.0f µs, hand-off %.0f µs); %d of %d calls late, %d by the generator's own wait", attempt, c.Protocol, c.LatencyUS.P50, c.LatencyUncorrectedUS.P50, wake, handoff, c.LateCalls, c.Calls+c.Errors, c.GeneratorLateCalls)
			problems = append(problems, openLoopProblems(c, max(0.01, 2*noise))...)
		}
		p99 := idle[len(idle)*99/100]
		t.Logf("attempt %d, machine: %.1f%% of the control's waits late, p99 %v", attempt, 100*noise, p99)
		if len(problems) > 0 && p99 > 2*engine.LateThreshold {
			// The machine itself wakes an idle process milliseconds late
			// (other work on its cores, CPU steal): no harness can be
			// shown precise here, and a failure would say nothing of it.
			timing.Skip(t, "machine too busy to check open-loop precision: the control's waits wake up to %v late (p99); %v", p99, problems)
		}
		return problems
	})
}

// lateShare is the share of lateness samples above LateThreshold.
func lateShare(late []time.Duration) float64 {
	n := 0
	for _, l := range late {
		if l > engine.LateThreshold {
			n++
		}
	}
	return float64(n) / float64(max(1, len(late)))
}

func openLoopProblems(c results.Cell, lateAllowed float64) []string {
	attempts := c.Calls + c.Errors
	if c.Errors != 0 || attempts < 300 || c.LatencyUncorrectedUS == nil {
		return []string{fmt.Sprintf("%s: %d calls, %d errors: want about 400 calls, no errors", c.Protocol, c.Calls, c.Errors)}
	}
	var out []string
	corr, unc := c.LatencyUS.P50, c.LatencyUncorrectedUS.P50
	// The gap is the dispatcher's lateness and the hand-off. Within 10% or
	// 50 µs; or, on a loaded machine where the netpoller wakes goroutines
	// later, within what the cell measured of the generator's own delays
	// (the canary's wake-up and the hand-off, p50) and 20 µs: the harness
	// may not add a delay it does not measure and report.
	allowed, measured := max(1.1*unc, unc+50), 0.0
	if g := c.GeneratorDelayUS; g != nil && g.Handoff != nil {
		measured = g.Wake.P50 + g.Handoff.P50
		allowed = max(allowed, unc+measured+20)
	}
	if corr > allowed {
		out = append(out, fmt.Sprintf("%s: corrected p50 %.0f µs vs uncorrected %.0f µs: more than 10%%, 50 µs, and the generator's measured delays (%.0f µs) + 20 µs apart", c.Protocol, corr, unc, measured))
	}
	if float64(c.LateCalls) > lateAllowed*float64(attempts) {
		out = append(out, fmt.Sprintf("%s: %d of %d calls late, %d by the generator's own wait (allowed %.1f%%)", c.Protocol, c.LateCalls, attempts, c.GeneratorLateCalls, 100*lateAllowed))
	}
	return out
}
