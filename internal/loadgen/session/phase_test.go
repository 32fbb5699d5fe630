package session

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/target"
	"github.com/meteorbench/meteorbench/internal/timing"
)

// slowCaller takes d per call.
type slowCaller struct{ d time.Duration }

func (c slowCaller) Call(ctx context.Context) (call.Outcome, error) {
	select {
	case <-time.After(c.d):
		return call.Outcome{}, nil
	case <-ctx.Done():
		return call.Outcome{}, ctx.Err()
	}
}

// slowClient makes slowCallers, for a phase that grows its workers.
type slowClient struct{ d time.Duration }

func (c slowClient) Caller(api.Scenario) (call.Caller, error) { return slowCaller(c), nil }
func (slowClient) Close() error                               { return nil }

// An open loop that sizes itself counts the workers it added: calls of 20
// ms at 500 calls/s keep about ten in flight, where the phase started with
// one.
func TestOpenLoopCountsGrownWorkers(t *testing.T) {
	c := slowClient{20 * time.Millisecond}
	first, _ := c.Caller(api.Small)
	cs := singleCallers(first)
	cs.client, cs.scenarios, cs.max = c, []api.Scenario{api.Small}, 100
	res := runPhase(context.Background(), cs, 1, time.Minute, schedule{rate: 500}, bounds{soft: 300 * time.Millisecond, hard: time.Minute})
	if res.workers != len(cs.list) || res.workers < 5 {
		t.Errorf("phase counted %d workers; %d ran (about 10 needed)", res.workers, len(cs.list))
	}
}

// The last call due before the soft end is sent when the dispatcher's
// coarse tick (10,000 calls/s: one every clock.MinTick) comes for it just
// after the soft end (EndGrace). Before, a wait cut at the soft end itself
// lost it in 2 of 10 windows. Timing-dependent: the dispatcher must wake
// within EndGrace; up to three attempts of 20 windows, each attempt's
// figures logged, one of them without a missed call.
func TestOpenLoopSendsTheLastCall(t *testing.T) {
	if raceDetector {
		t.Skip("timing: the race detector slows the dispatcher past EndGrace; runs in the normal step")
	}
	idle := func() *callers { return singleCallers(slowCaller{0}, slowCaller{0}, slowCaller{0}, slowCaller{0}) }
	quiet := true // the machine, in every attempt
	for attempt := 1; attempt <= 3; attempt++ {
		var missed, sent uint64
		load := timing.LoadAverage()
		quiet = quiet && load >= 0 && load < float64(runtime.NumCPU())
		for range 20 {
			res := runPhase(context.Background(), idle(), 1, time.Minute, schedule{rate: 10000}, bounds{soft: 50 * time.Millisecond, hard: time.Minute})
			missed += res.missed
			sent += uint64(res.t.calls)
		}
		t.Logf("timing: attempt %d (load average %.1f): %d calls sent in 20 windows of 500, %d missed", attempt, load, sent, missed)
		if missed == 0 {
			return
		}
	}
	if !quiet { // the dispatcher woke late past EndGrace for want of a CPU: not the code's miss
		timing.Skip(t, "not judged: a call was missed in each of three attempts while the machine was busy (load average %.1f on %d CPUs; figures above)", timing.LoadAverage(), runtime.NumCPU())
	}
	t.Errorf("timing: a call due before the soft end was missed in each of three attempts on a quiet machine")
}

// Open loop, one worker busy past the soft end: no call starts after it.
// The first call (due at 0) holds the only worker for 100 ms; the 19 other
// calls due before the 20 ms soft end are missed, not sent late.
func TestOpenLoopNoCallAfterSoftEnd(t *testing.T) {
	soft := 20 * time.Millisecond
	res := runPhase(context.Background(), singleCallers(slowCaller{100 * time.Millisecond}), 1, time.Minute, schedule{rate: 1000}, bounds{soft: soft, hard: time.Minute})
	if n := res.t.calls + res.t.errors; n != 1 {
		t.Errorf("%d calls sent, want 1", n)
	}
	if res.missed != 19 {
		t.Errorf("%d missed, want 19", res.missed)
	}
	if res.t.batch.N != 0 {
		t.Errorf("open loop timed %d batches", res.t.batch.N)
	}
}

// The wait never returns before the due time, and gives up when its
// context ends.
func TestWaitUntil(t *testing.T) {
	ctx := context.Background()
	for _, d := range []time.Duration{-time.Millisecond, 0, 50 * time.Microsecond, 400 * time.Microsecond, 5 * time.Millisecond} {
		due := time.Now().Add(d)
		if !waitUntil(ctx, due) {
			t.Fatalf("wait %v: gave up", d)
		}
		if now := time.Now(); now.Before(due) {
			t.Errorf("wait %v: returned %v early", d, due.Sub(now))
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for _, d := range []time.Duration{time.Hour, 20 * time.Millisecond} { // on a timer, in nanosleeps
		if waitUntil(cctx, time.Now().Add(d)) {
			t.Errorf("a cancelled wait of %v reported success", d)
		}
	}
	late := measureScheduling(ctx, 20)
	if len(late) != 20 || late[0] < 0 || late[0] > late[19] {
		t.Errorf("scheduling samples %v", late)
	}
}

// Per-call figures are per successful call: 10 successes and 90 failures
// that moved 12,000 bytes are 1,200 bytes a call, not 120.
func TestSummarizePerSuccessfulCall(t *testing.T) {
	r := &runner{cfg: plan.Config{Target: target.One("x"), Rate: 100}.WithDefaults()}
	tl := newTally(true)
	base := time.Now()
	for i := range 100 {
		rec := record{intended: base, start: base, end: base.Add(time.Millisecond)}
		if i >= 10 {
			rec.err, rec.class = call.Invalid("record %d: id 7, want 12", i), results.ClassInvalid
		}
		tl.add(&rec)
	}
	tl.batch.Add(1e6) // must not show in an open-loop cell
	before := snapshot{wire: wire.Stats{Sent: 1000, Received: 5000}, clientCPU: time.Second}
	after := snapshot{wire: wire.Stats{Sent: 13000, Received: 25000}, clientCPU: time.Second + 50*time.Millisecond}
	spec := plan.Spec{CellKey: results.CellKey{Scenario: "small", Protocol: "rest", Batch: 1, Condition: results.Condition{Concurrency: 1, RateRequested: 100}}}
	c := r.summarize(spec, nil, shareOf(r.cfg, spec, r.cfg.Bounds()), phaseResult{t: tl, elapsed: time.Second}, before, after, 1)
	if c.Calls != 10 || c.Errors != 90 {
		t.Fatalf("calls %d, errors %d", c.Calls, c.Errors)
	}
	if c.BytesPerCall.Sent != 1200 || c.BytesPerCall.Received != 2000 {
		t.Errorf("bytes per call %+v, want 1200 sent, 2000 received (per success)", c.BytesPerCall)
	}
	if c.ClientCPUUSPerCall != 5000 {
		t.Errorf("client CPU per call %v µs, want 5000 (50 ms / 10 successes)", c.ClientCPUUSPerCall)
	}
	if c.RateAchieved != 100 {
		t.Errorf("achieved rate %v, want 100 attempts/s", c.RateAchieved)
	}
	if c.Batches != 0 || c.BatchMS != (results.Spread{}) {
		t.Errorf("open-loop cell with time per batch: %d, %+v", c.Batches, c.BatchMS)
	}
	if got := c.ErrorExamples[results.ClassInvalid]; got != "record 10: id 7, want 12" {
		t.Errorf("error example %q, want the first one without its class", got)
	}
}

// The first message of each class survives merging, and only one is kept.
func TestTallyKeepsFirstErrorPerClass(t *testing.T) {
	a, b := newTally(false), newTally(false)
	now := time.Now()
	for i, r := range []struct {
		t   *tally
		err error
	}{
		{a, call.HTTPStatus(401, "status 401: bad token")},
		{a, call.HTTPStatus(401, "status 401: other")},
		{b, call.HTTPStatus(401, "status 401: from b")},
		{b, errors.New("dial tcp: connection refused")},
	} {
		rec := record{intended: now, start: now, end: now.Add(time.Duration(i)), err: r.err, class: call.Classify(context.Background(), r.err)}
		r.t.add(&rec)
	}
	a.merge(b)
	want := map[string]string{"http-401": "status 401: bad token", "transport": "dial tcp: connection refused"}
	if len(a.examples) != len(want) || a.examples["http-401"] != want["http-401"] || a.examples["transport"] != want["transport"] {
		t.Errorf("examples %q, want %q", a.examples, want)
	}
	if a.classes["http-401"] != 3 {
		t.Errorf("classes %v", a.classes)
	}
}

// Repeats merged keep one example per class, the first repeat's.
func TestMergeCellKeepsOneExample(t *testing.T) {
	k := results.CellKey{Protocol: "rest", Scenario: "small", Batch: 1, Condition: results.Condition{Concurrency: 1}}
	m := mergeCell([]results.Cell{
		{CellKey: k, Errors: 1, ErrorClasses: results.ErrorCounts{"timeout": 1}, ErrorExamples: map[results.ErrorClass]string{"timeout": "first"}},
		{CellKey: k, Errors: 2, ErrorClasses: results.ErrorCounts{"timeout": 1, "transport": 1}, ErrorExamples: map[results.ErrorClass]string{"timeout": "second", "transport": "refused"}},
	})
	if m.ErrorExamples["timeout"] != "first" || m.ErrorExamples["transport"] != "refused" || len(m.ErrorExamples) != 2 {
		t.Errorf("merged examples %q", m.ErrorExamples)
	}
}

// The warning on late calls says which of them the dispatcher woke late
// for and which waited for a worker, and counts the workers the phase ran
// with, the ones it added included.
func TestLateWhy(t *testing.T) {
	for _, c := range []struct {
		late, woken    int64
		workers, limit int
		want           string
	}{
		{10, 0, 1, 0, "waiting for a worker (a slow server, or the one worker busy) or for the worker to run"},
		{10, 10, 4, 0, "the load generator woke late for all of them (its own scheduling or CPU)"},
		{10, 7, 378, 100000, "7 because the load generator woke late (its own scheduling or CPU), 3 waiting for a worker (a slow server, or all 378 workers busy, added as calls came due, at most 100,000) or for the worker to run"},
	} {
		if got := lateWhy(c.late, c.woken, c.workers, c.limit); got != c.want {
			t.Errorf("lateWhy(%d, %d, %d, %d) = %q, want %q", c.late, c.woken, c.workers, c.limit, got, c.want)
		}
	}
}
