package capacity_test

import (
	"context"
	"fmt"
	"github.com/meteorbench/meteorbench/internal/target"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/capacity"
	"github.com/meteorbench/meteorbench/internal/loadgen/loadgentest"
	loadplan "github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/timing"
)

// plan searches the small call over one protocol of srv, with short probes
// and a bounded time.
func plan(srv *loadgentest.Server, proto api.Protocol, start float64) *capacity.Plan {
	return &capacity.Plan{
		Base: loadplan.Config{
			Target:      target.One(srv.Addr),
			Protocols:   []api.Protocol{proto},
			Scenarios:   []api.Scenario{api.Small},
			Batches:     []int{1},
			Concurrency: []int{1},
			Timeout:     5 * time.Second,
		},
		Objective:   capacity.Objective{Percentile: 99, Bound: 50 * time.Millisecond, MaxErrors: 0.001},
		Settings:    capacity.Settings{Start: start, Precision: 0.03},
		Probe:       time.Second,
		ProbeWarmup: 250 * time.Millisecond,
		Pause:       100 * time.Millisecond,
		MaxTime:     40 * time.Second,
	}
}

func logProbes(t *testing.T, c results.Capacity) {
	t.Helper()
	for _, p := range c.Probes {
		t.Logf("%-8s %6.0f offered %6.0f achieved  p50 %7.0f µs  p99 %8.0f µs  %s %s", p.Phase, p.Offered, p.Achieved, p.LatencyUS.P50, p.LatencyUS.P99, p.Verdict, p.Why)
	}
	t.Logf("found %v [%v, %v], held %d of %d, complete %v, generator-bound %v: %s", c.Rate, c.Lo, c.Hi, c.Held, c.Boundary, c.Complete, c.GeneratorBound, c.Note)
}

// A server of known capacity, 4 slots of 10 ms = 400 calls/s, on real
// sockets: the search finds it within 10%. The capacity is low enough that
// the generator is never the limit on a 2-core machine. The bound (p99 100
// ms) outlasts this shared machine's stalls, and the probe (2 s) is long
// enough that 5% over the capacity builds a backlog beyond it.
// Timing-dependent: timing.Retry, a second search when the first is off,
// each search's probes logged.
func TestPlanFindsKnownCapacity(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a search of about 20 s for a timing claim (TestPlanOneWorkerIsGeneratorBound runs the search under the race detector); runs in the normal step")
	}
	if raceEnabled {
		t.Skip("the race detector slows the generator: no timing claim (the one-worker test runs the search under it)")
	}
	cfg := loadgentest.Config{Slots: 4, ServiceTime: 10 * time.Millisecond}
	want := cfg.Capacity()
	srv := loadgentest.Start(t, cfg)
	// From 150 calls/s: 150, 300, 600, then bisection around 400; at
	// exactly the capacity any jitter leaves a backlog, so the found rate
	// is usually just below it.
	// A bracket 9% wide: its lower end, the rate found, is then within
	// 10% of a capacity inside it, all this test asks.
	p := plan(srv, api.GRPC, 150)
	p.Settings.Precision = 0.09
	p.Objective.Bound = 100 * time.Millisecond
	p.Probe = 2 * time.Second
	p.MaxTime = 30 * time.Second // 10-12 probes: a bracket of 9% in 6-8 of them, then its confirmation
	var probes atomic.Int32
	p.OnProbe = func(results.CellKey, capacity.Probe) { probes.Add(1) }
	var c results.Capacity // the search that counted, for the checks below
	// Under other builds and tests on this 2-core machine one boundary
	// probe can fail below the capacity (342 found once).
	timing.Retry(t, 2, func(attempt int) []string {
		probes.Store(0)
		found, err := p.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(found) != 1 {
			t.Fatalf("%d series", len(found))
		}
		c = found[0]
		t.Logf("search %d:", attempt)
		logProbes(t, c)
		if c.GeneratorBound > 0 {
			t.Fatalf("generator-bound at %v calls/s against a %v calls/s server: %s", c.GeneratorBound, want, c.Note)
		}
		if c.Rate < 0.9*want || c.Rate > 1.1*want {
			return []string{fmt.Sprintf("found %v calls/s, capacity %v: more than 10%% off", c.Rate, want)}
		}
		return nil
	})
	if c.Hi == 0 || c.Lo != c.Rate || c.Hi < c.Lo {
		t.Errorf("bracket [%v, %v] around %v", c.Lo, c.Hi, c.Rate)
	}
	// The workers the probes at the found rate had, for a check with run.
	if w := capacity.AutoWorkers(c.Rate, p.Objective.Bound); c.Workers != w || w < 8 {
		t.Errorf("workers %d, want %d", c.Workers, w)
	}
	// Every probe is kept, and OnProbe saw each.
	if len(c.Probes) == 0 || int(probes.Load()) != len(c.Probes) {
		t.Errorf("%d probes kept, %d reported", len(c.Probes), probes.Load())
	}
	for _, pr := range c.Probes {
		if pr.Calls == 0 || pr.DurationS <= 0 || pr.LatencyUS.P99 <= 0 || pr.Verdict == "" {
			t.Errorf("probe %+v", pr)
		}
	}
}

// One worker against a handler of 5 ms (a server of 64 slots: 12,800
// calls/s): from about 200 calls/s every call waits for the worker while
// the server answers each in 5 ms, well within the bound. Those probes are
// void, "all 1 workers were busy", and the search says generator-bound:
// never the server's capacity.
func TestPlanOneWorkerIsGeneratorBound(t *testing.T) {
	cfg := loadgentest.Config{Slots: 64, ServiceTime: 5 * time.Millisecond}
	srv := loadgentest.Start(t, cfg)
	p := plan(srv, api.REST, 50)
	p.Workers = 1
	p.MaxTime = 12 * time.Second // the first probes past 200 calls/s are void already
	var c results.Capacity
	// Timing-dependent: on a loaded machine the search can run out of
	// --max-time before it sees the worker as the limit (timing.Retry).
	timing.Retry(t, 2, func(attempt int) []string {
		found, err := p.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		c = found[0]
		t.Logf("search %d:", attempt)
		logProbes(t, c)
		if c.GeneratorBound == 0 || c.Complete || !strings.Contains(c.Note, "generator-bound") {
			return []string{fmt.Sprintf("not generator-bound: found %v, complete %v (%s)", c.Rate, c.Complete, c.Note)}
		}
		return nil
	})
	if t.Failed() {
		return
	}
	busy := false
	for _, pr := range c.Probes {
		busy = busy || pr.Verdict == "void" && strings.Contains(pr.Why, "all 1 workers were busy while the server met the objective")
	}
	if !busy {
		t.Error(`no probe void with "all 1 workers were busy"`)
	}
	// One 5 ms worker delivers at most 200 calls/s: what passed is the
	// generator's, far below the server's 12,800; the search bisected up
	// to that limit.
	if c.Rate >= c.GeneratorBound || c.Rate > 200 || c.Hi != 0 {
		t.Errorf("found %v, generator-bound at %v, server capacity %v", c.Rate, c.GeneratorBound, cfg.Capacity())
	}
}

// stallAfter is a loadgentest hook that stops every data call for d from
// the moment call n arrives, as a server stopped (SIGSTOP) for d would; d
// 0: for good. A held call is let go when its client gives up.
func stallAfter(n int64, d time.Duration) (hook func(context.Context, int64), began func() time.Time) {
	var mu sync.Mutex
	var from time.Time
	hook = func(ctx context.Context, i int64) {
		mu.Lock()
		if i == n {
			from = time.Now()
		}
		f := from
		mu.Unlock()
		if f.IsZero() {
			return
		}
		var until <-chan time.Time
		if d > 0 {
			if time.Since(f) >= d {
				return
			}
			tm := time.NewTimer(d - time.Since(f))
			defer tm.Stop()
			until = tm.C
		}
		select {
		case <-until:
		case <-ctx.Done():
		}
	}
	began = func() time.Time { mu.Lock(); defer mu.Unlock(); return from }
	return hook, began
}

// A server stopped for 2.5 s during the first probe's measured time: its
// calls are still running at the probe's hard end, so the probe is void
// ("the target stalled: ..."), repeated at the same rate, and the search
// goes on from the repeat; the stalled probe never becomes the capacity.
// Timing-dependent (the stall must fall in the measured time and end
// before the repeat): up to three attempts, each one's probes logged.
func TestPlanStalledProbeRetried(t *testing.T) {
	var last string
	for attempt := 1; attempt <= 3; attempt++ {
		// 100 calls/s: calls 1-10 are the warm-up (100 ms), 11-40 the
		// measured 300 ms; call 25 is about 150 ms into it.
		hook, began := stallAfter(25, 2500*time.Millisecond)
		srv := loadgentest.Start(t, loadgentest.Config{Hook: hook})
		p := plan(srv, api.GRPC, 100)
		p.Objective.Bound = 200 * time.Millisecond // loose: the noisy machine's stalls are not the point
		p.Probe, p.ProbeWarmup = 300*time.Millisecond, 100*time.Millisecond
		p.Pause = time.Second // the repeat starts after the stall
		p.MaxTime = 7 * time.Second
		start := time.Now()
		found, err := p.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		c := found[0]
		t.Logf("attempt %d: the stall began %v after the search", attempt, began().Sub(start).Round(time.Millisecond))
		logProbes(t, c)
		last = check(c)
		if last == "" {
			return
		}
		t.Logf("attempt %d: %s", attempt, last)
	}
	t.Error(last)
}

// check says what is wrong with a search whose first probe stalled.
func check(c results.Capacity) string {
	switch {
	case len(c.Probes) < 2:
		return fmt.Sprintf("%d probes", len(c.Probes))
	case c.Probes[0].Verdict != "void" || !strings.HasPrefix(c.Probes[0].Why, capacity.StallPrefix):
		return fmt.Sprintf("first probe %s (%s), want void: the target stalled", c.Probes[0].Verdict, c.Probes[0].Why)
	case c.Probes[1].Offered != 100 || c.Probes[1].Phase != "grow" || c.Probes[1].Verdict != "pass":
		return fmt.Sprintf("second probe %s %s at %v (%s), want the repeat at 100, passing", c.Probes[1].Phase, c.Probes[1].Verdict, c.Probes[1].Offered, c.Probes[1].Why)
	case c.Failure != "" || c.Rate < 100 || (c.Hi > 0 && c.Hi <= 100):
		return fmt.Sprintf("found %v [%v, %v], failure %q: the stall set the capacity", c.Rate, c.Lo, c.Hi, c.Failure)
	}
	return ""
}

// A server stopped for good after a few calls: every repeat of the probe
// stalls, and the series fails, said plainly, with no rate claimed.
func TestPlanStalledSeriesFails(t *testing.T) {
	hook, _ := stallAfter(25, 0)
	srv := loadgentest.Start(t, loadgentest.Config{Hook: hook})
	p := plan(srv, api.REST, 100)
	p.Base.Timeout = time.Second // a 1 s grace at the probe's end
	p.Probe, p.ProbeWarmup, p.Pause = 300*time.Millisecond, 100*time.Millisecond, 50*time.Millisecond
	p.Settings.StallRetries = 1
	p.MaxTime = 20 * time.Second
	found, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := found[0]
	logProbes(t, c)
	if c.Failure == "" || c.Rate != 0 || c.Complete || len(c.Probes) != 2 {
		t.Fatalf("failure %q, rate %v, complete %v, %d probes", c.Failure, c.Rate, c.Complete, len(c.Probes))
	}
	if !strings.HasPrefix(c.Failure, "failed: the target stalled in 2 probes in a row at 100 calls/s (last: ") || c.Note != c.Failure {
		t.Errorf("failure %q, note %q", c.Failure, c.Note)
	}
	if err := capacity.Failed(found); err == nil || !strings.Contains(err.Error(), "capacity small REST: failed: the target stalled") {
		t.Errorf("Failed: %v", err)
	}
}

// The default --max-time gives every series, and every repetition, the
// time of capacity.BudgetProbes probes and BudgetLongProbes confirmation
// probes with their warm-ups and pauses.
func TestDefaultMaxTime(t *testing.T) {
	p := &capacity.Plan{
		Base:         loadplan.Config{Protocols: []api.Protocol{api.REST, api.GRPC}, Scenarios: []api.Scenario{api.Small}},
		Probe:        2 * time.Second,
		ConfirmProbe: 5 * time.Second,
		ProbeWarmup:  500 * time.Millisecond,
		Pause:        300 * time.Millisecond,
	}
	if got, want := p.DefaultMaxTime(), (2 * (20*2800 + 6*5800) * time.Millisecond).Round(time.Second); got != want {
		t.Errorf("two series: %v, want %v", got, want)
	}
	p.Repeat, p.ConfirmProbe = 3, 0 // confirmations as long as probes
	if got, want := p.DefaultMaxTime(), (3 * 2 * (26 * 2800) * time.Millisecond).Round(time.Second); got != want {
		t.Errorf("two series, three repetitions: %v, want %v", got, want)
	}
}
