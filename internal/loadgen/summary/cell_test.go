package summary

import (
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/target"
)

// Per-call figures are per successful call: 10 successes and 90 failures
// that moved 12,000 bytes are 1,200 bytes a call, not 120.
func TestCellPerSuccessfulCall(t *testing.T) {
	cfg := plan.Config{Target: target.One("x"), Rate: 100}.WithDefaults()
	tl := engine.NewTally(true) // as the engine tallies 10 successes and 90 invalid answers
	tl.Calls, tl.Errors = 10, 90
	tl.Classes[results.ClassInvalid] = 90
	tl.Examples = map[results.ErrorClass]string{results.ClassInvalid: "record 10: id 7, want 12"}
	tl.Batch.Add(1e6) // must not show in an open-loop cell
	before := Snapshot{Wire: wire.Stats{Sent: 1000, Received: 5000}, ClientCPU: time.Second}
	after := Snapshot{Wire: wire.Stats{Sent: 13000, Received: 25000}, ClientCPU: time.Second + 50*time.Millisecond}
	spec := plan.Spec{CellKey: results.CellKey{Scenario: "small", Protocol: "rest", Batch: 1, Condition: results.Condition{Concurrency: 1, RateRequested: 100}}}
	c := Cell(Phase{Spec: spec, Share: engine.ShareOf(cfg.Segment, cfg.MaxWorkers, spec.CellKey, cfg.Iterations),
		Result: engine.Result{Tally: tl, Elapsed: time.Second}, Before: before, After: after, Dials: 1, Config: cfg, Target: "x"})
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
		t.Errorf("error example %q, want the tally's", got)
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
