package session_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/target"

	"github.com/meteorbench/meteorbench/api"

	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/loadgentest"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/testmode"
	"github.com/meteorbench/meteorbench/internal/timing"
)

// Open loop: the server stalls once, for at least a second, forced through
// a channel. Every call scheduled during the stall starts late; measured
// from its intended start (corrected) the stall shows in the percentiles,
// measured from the send (uncorrected) it hides in one call.
func TestOpenLoopShowsAStall(t *testing.T) {
	const (
		rate  = 1000 // calls/s: one due every millisecond
		calls = 400  // due within the first 0.4 s
		stall = time.Second
	)
	stalled, release := make(chan struct{}), make(chan struct{})
	srv := loadgentest.Start(t, loadgentest.Config{Hook: func(_ context.Context, n int64) {
		if n == 10 {
			close(stalled)
			<-release
		}
	}})
	go func() {
		<-stalled
		time.Sleep(stall) // the stall lasts at least this long
		close(release)
	}()
	res := run(t, plan.Config{
		Target:      target.One(srv.Addr),
		Protocols:   []api.Protocol{api.GRPC},
		Scenarios:   []api.Scenario{api.Small},
		Batches:     []int{10},
		Iterations:  calls / 10,
		Concurrency: []int{1},
		Rate:        rate,
		Warmup:      -1,
	})
	c := res.Cells[0]
	if c.Mode != results.ModeOpen || c.RateRequested != rate || res.Settings.Mode != results.ModeOpen {
		t.Fatalf("mode %q, rate %v", c.Mode, c.RateRequested)
	}
	if c.Calls != calls || c.Errors != 0 {
		t.Fatalf("%d calls, %d errors, want %d, 0", c.Calls, c.Errors, calls)
	}
	unc := c.LatencyUncorrectedUS
	if unc == nil {
		t.Fatal("no uncorrected latency in open-loop mode")
	}
	stallUS := float64(stall.Microseconds())
	// The stalled call itself took the whole stall, however measured.
	if c.LatencyUS.Max < stallUS || unc.Max < stallUS {
		t.Errorf("max latency: corrected %v µs, uncorrected %v µs; want both >= the %v µs stall", c.LatencyUS.Max, unc.Max, stallUS)
	}
	// The 390 calls due from 10 ms to 399 ms were sent after the stall
	// ended (>= 1.009 s): each waited at least 0.6 s past its intended start.
	if min := 0.6 * stallUS; c.LatencyUS.P50 < min || c.LatencyUS.P90 < min {
		t.Errorf("corrected p50 %v µs, p90 %v µs; want >= %v µs: the stall must show", c.LatencyUS.P50, c.LatencyUS.P90, min)
	}
	// Measured from the send, those calls were ordinary small calls: the
	// stall hides in one call, the one the server held (one worker).
	if unc.P50 > stallUS/4 || unc.P90 > stallUS/4 {
		t.Errorf("uncorrected p50 %v µs, p90 %v µs; want well under the %v µs stall", unc.P50, unc.P90, stallUS)
	}
	h, err := results.DecodeHistogram(c.Histograms.Uncorrected)
	if err != nil {
		t.Fatalf("uncorrected histogram: %v", err)
	}
	var held int64
	for _, b := range h.Distribution() {
		if float64(b.From) >= stallUS*1e3/2 { // ns
			held += b.Count
		}
	}
	if held != 1 {
		t.Errorf("%d calls took over half the stall from their send, want 1 (the held one)", held)
	}
	if c.LateCalls < calls-10 {
		t.Errorf("%d late calls, want at least the %d due during the stall", c.LateCalls, calls-10)
	}
	if !slices.ContainsFunc(c.Warnings, func(w string) bool {
		return strings.HasPrefix(w, fmt.Sprintf("%d of %d calls started more than %v after they were due", c.LateCalls, calls, engine.LateThreshold))
	}) {
		t.Errorf("warnings %q, want the one about the %d late calls", c.Warnings, c.LateCalls)
	}
	assertRoundTrip(t, res)
}

// Open loop against the real server, bounded by time: never more calls
// than the schedule holds, the achieved rate and both latencies reported.
// Whether the schedule was kept (at least half of it) depends on timing:
// timing.Retry, each attempt's figures logged.
func TestOpenLoopRate(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	const rate, duration = 2000, 300 * time.Millisecond
	judge := !testmode.UnderRace(t, "whether the schedule was kept is not judged (the detector slows the generator several times over)")
	timing.Retry(t, 3, func(attempt int) (misses []string) {
		res := run(t, plan.Config{
			Target:      target.One(addr),
			Protocols:   []api.Protocol{api.GRPC, api.REST},
			Scenarios:   []api.Scenario{api.Small},
			Batches:     []int{10},
			Concurrency: []int{4},
			Duration:    duration,
			Warmup:      100 * time.Millisecond,
			Rate:        rate,
		})
		for _, c := range res.Cells {
			n := c.Calls + c.Errors
			t.Logf("attempt %d, %s: %d calls in %.3f s, achieved %.0f/s", attempt, c.Key(), n, c.DurationS, c.RateAchieved)
			if n > rate*3/10 || c.Errors != 0 {
				t.Errorf("%s: %d calls, %d errors; want at most %d (the schedule of %v at %d/s), none failed", c.Key(), n, c.Errors, rate*3/10, duration, rate)
			}
			// Small calls at a tenth of what 4 workers manage: the
			// schedule is kept, less what a busy machine's late start
			// may cost.
			if judge && n < rate*3/10/2 {
				misses = append(misses, fmt.Sprintf("%s: %d calls, want at least half the schedule's %d", c.Key(), n, rate*3/10))
			}
			// The achieved rate is the attempts over the measured time.
			if want := float64(n) / c.DurationS; math.Abs(c.RateAchieved-want) > 0.01*want {
				t.Errorf("%s: achieved %v calls/s, want %d calls / %v s = %v", c.Key(), c.RateAchieved, n, c.DurationS, want)
			}
			if c.LatencyUncorrectedUS == nil || c.Mode != results.ModeOpen || c.Key() != string(c.Scenario)+"/"+string(c.Protocol)+"/b10/c4/r2000" {
				t.Fatalf("%s: uncorrected %v, mode %q", c.Key(), c.LatencyUncorrectedUS, c.Mode)
			}
			// Measured from the intended start, a call can only look slower.
			if c.LatencyUS.Max < c.LatencyUncorrectedUS.Max || c.LatencyUS.Mean < c.LatencyUncorrectedUS.Mean {
				t.Errorf("%s: corrected %+v below uncorrected %+v", c.Key(), c.LatencyUS, *c.LatencyUncorrectedUS)
			}
			if c.Batches != 0 || c.BatchMS != (results.Spread{}) {
				t.Errorf("%s: open-loop cell with a time per batch: %d batches, %+v", c.Key(), c.Batches, c.BatchMS)
			}
		}
		if s := res.Env.Scheduling; s == nil || s.Method == "" || s.Samples < 100 || s.LatenessP50US < 0 || s.LatenessP99US < s.LatenessP50US {
			t.Errorf("scheduling not measured: %+v", s)
		}
		return misses
	})
}
