package engine

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/testmode"
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

func (slowClient) Close() error { return nil }

// An open loop that sizes itself counts the workers it added: calls of 20
// ms at 500 calls/s keep about ten in flight, where the phase started with
// one.
func TestOpenLoopCountsGrownWorkers(t *testing.T) {
	c := slowClient{20 * time.Millisecond}
	first, _ := c.Caller(api.Small)
	cs := SingleCallers(first)
	cs.client, cs.scenarios, cs.max = c, []api.Scenario{api.Small}, 100
	res := runPhase(context.Background(), cs, 1, time.Minute, Schedule{Rate: 500}, Bounds{Soft: 300 * time.Millisecond, Hard: time.Minute})
	if res.Workers != len(cs.List) || res.Workers < 5 {
		t.Errorf("phase counted %d workers; %d ran (about 10 needed)", res.Workers, len(cs.List))
	}
}

// The last call due before the soft end is sent when the dispatcher's
// coarse tick (10,000 calls/s: one every clock.MinTick) comes for it just
// after the soft end (EndGrace). Before, a wait cut at the soft end itself
// lost it in 2 of 10 windows. Timing-dependent: the dispatcher must wake
// within EndGrace; up to three attempts of 20 windows, each attempt's
// figures logged, one of them without a missed call.
func TestOpenLoopSendsTheLastCall(t *testing.T) {
	if testmode.Race {
		t.Skip("timing: the race detector slows the dispatcher past EndGrace; runs in the normal step")
	}
	idle := func() *Callers {
		return SingleCallers(slowCaller{0}, slowCaller{0}, slowCaller{0}, slowCaller{0})
	}
	quiet := true // the machine, in every attempt
	for attempt := 1; attempt <= 3; attempt++ {
		var missed, sent uint64
		load := timing.LoadAverage()
		quiet = quiet && load >= 0 && load < float64(runtime.NumCPU())
		for range 20 {
			res := runPhase(context.Background(), idle(), 1, time.Minute, Schedule{Rate: 10000}, Bounds{Soft: 50 * time.Millisecond, Hard: time.Minute})
			missed += res.Missed
			sent += uint64(res.Tally.Calls)
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
	res := runPhase(context.Background(), SingleCallers(slowCaller{100 * time.Millisecond}), 1, time.Minute, Schedule{Rate: 1000}, Bounds{Soft: soft, Hard: time.Minute})
	if n := res.Tally.Calls + res.Tally.Errors; n != 1 {
		t.Errorf("%d calls sent, want 1", n)
	}
	if res.Missed != 19 {
		t.Errorf("%d missed, want 19", res.Missed)
	}
	if res.Tally.Batch.N != 0 {
		t.Errorf("open loop timed %d batches", res.Tally.Batch.N)
	}
}

// The wait never returns before the due time, and gives up when its
// context ends.
func TestWaitUntil(t *testing.T) {
	ctx := context.Background()
	for _, d := range []time.Duration{-time.Millisecond, 0, 50 * time.Microsecond, 400 * time.Microsecond, 5 * time.Millisecond} {
		due := time.Now().Add(d)
		if !WaitUntil(ctx, due) {
			t.Fatalf("wait %v: gave up", d)
		}
		if now := time.Now(); now.Before(due) {
			t.Errorf("wait %v: returned %v early", d, due.Sub(now))
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for _, d := range []time.Duration{time.Hour, 20 * time.Millisecond} { // on a timer, in nanosleeps
		if WaitUntil(cctx, time.Now().Add(d)) {
			t.Errorf("a cancelled wait of %v reported success", d)
		}
	}
	late := MeasureScheduling(ctx, 20)
	if len(late) != 20 || late[0] < 0 || late[0] > late[19] {
		t.Errorf("scheduling samples %v", late)
	}
}

// The first message of each class survives merging, and only one is kept.
func TestTallyKeepsFirstErrorPerClass(t *testing.T) {
	a, b := NewTally(false), NewTally(false)
	now := time.Now()
	for i, r := range []struct {
		t   *Tally
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
	if len(a.Examples) != len(want) || a.Examples["http-401"] != want["http-401"] || a.Examples["transport"] != want["transport"] {
		t.Errorf("examples %q, want %q", a.Examples, want)
	}
	if a.Classes["http-401"] != 3 {
		t.Errorf("classes %v", a.Classes)
	}
}
