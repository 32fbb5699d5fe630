// Package engine runs the calls of one cell, protocol-agnostic: workers
// over a client's Callers, closed loop or open loop (paced by package
// pace, the workers growing as calls would start late), within Bounds,
// each call one record into a shard of the phase's Tally (HDR histograms,
// counters: no sample slices, bounded memory), merged into a Result.
//
//	Callers ──Run(bounds, schedules)──▶ workers ──record──▶ Tally ──▶ Result
package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/pace"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Result is a phase's merged tally and how long it took.
type Result struct {
	Tally   *Tally
	Elapsed time.Duration
	// open-loop: calls due before the soft end that were never sent.
	Missed uint64
	// stop is results.StopTargetDown when the target stopped answering, else "".
	Stop results.StopReason
	// workers is how many workers ran the phase, the ones an open loop
	// that sizes itself added included.
	Workers int
	// wake is the canary's lateness: how late goroutines woken by the
	// netpoller ran during the phase (canary.go).
	Wake *hdrhistogram.Histogram
	// parts is each part's tally and count of missed calls (t is all of
	// them together): one part but in a mix.
	Parts []PartResult
}

// PartResult is one part of a mixed phase.
type PartResult struct {
	Tally  *Tally
	Missed uint64
}

// schedule is a phase's open-loop schedule: every stride-th call, from call
// phase on, of the schedule at rate calls/s (a segment's share, see
// segment.go); rate 0 is closed loop.
type Schedule struct {
	Rate          float64
	Phase, Stride uint64
}

// runPhase runs the callers of one part until the bounds (Run).
func runPhase(ctx context.Context, cs *Callers, batch int, timeout time.Duration, sched Schedule, b Bounds) Result {
	return Run(ctx, cs, batch, timeout, []Schedule{sched}, b)
}

// Run runs the callers until the bounds, and merges their tallies,
// over traffic of one or several parts (a mix's scenarios):
// cs.list[w][i] is worker w's Caller of part i, scheds[i] part i's
// schedule, all open loop when there are several. One dispatcher hands
// out the calls of every part, in order of due time, to the shared free
// workers, adding workers as cs grows (an open loop that sizes itself),
// and each part has its own tallies. In open loop b.iterations counts
// calls of each schedule.
func Run(ctx context.Context, cs *Callers, batch int, timeout time.Duration, scheds []Schedule, b Bounds) Result {
	began := time.Now()
	ctx, cancel := context.WithDeadlineCause(ctx, began.Add(b.Hard), errCellEnd)
	defer cancel()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	p := &phase{Batch: batch, timeout: timeout, began: began, softEnd: began.Add(b.Soft), stop: stop}
	open := scheds[0].Rate > 0
	if open {
		for _, sc := range scheds {
			p.pacers = append(p.pacers, pace.Constant{Rate: sc.Rate, Duration: b.Soft, Calls: uint64(b.Iterations), Stride: sc.Stride, Phase: sc.Phase})
		}
		p.sent = make([]atomic.Uint64, len(scheds))
		p.free = newFreeWorkers(len(cs.List))
	} else if b.Iterations > 0 {
		p.remaining = new(atomic.Int64)
		p.remaining.Store(int64(b.Iterations))
	}
	nShards := len(cs.List)
	if open && cs.max > 0 {
		nShards = cs.max
	}
	shards := make([][]*shard, len(scheds)) // by part
	for i := range shards {
		shards[i] = newShards(nShards, open)
	}
	newWorker := func(i int, callers []call.Caller) *worker {
		w := &worker{caller: callers[0], s: shards[0][i%len(shards[0])], p: p}
		if len(callers) > 1 {
			w.Parts = make([]workerPart, len(callers))
			for j, c := range callers {
				w.Parts[j] = workerPart{c, shards[j][i%len(shards[j])]}
			}
		}
		if open {
			w.in = make(chan tick, 1)
		}
		return w
	}
	workers := make([]*worker, len(cs.List))
	for i, callers := range cs.List {
		workers[i] = newWorker(i, callers)
	}
	var wg sync.WaitGroup
	var dispatched sync.WaitGroup
	var extra []*worker // the workers grow added (the dispatcher's until it is done)
	if open {
		// The workers grow adds are the dispatcher's own: it starts them,
		// and ends them with the others.
		var grown sync.WaitGroup
		if cs.max > 0 {
			p.grow = func() (*worker, bool) {
				callers, ok := cs.grow()
				if !ok {
					return nil, false
				}
				w := newWorker(len(workers)+len(extra), callers)
				extra = append(extra, w)
				grown.Go(func() { w.openLoop(ctx) })
				return w, true
			}
		}
		dispatched.Go(func() {
			p.dispatch(ctx)
			for _, w := range append(workers, extra...) { // the schedule is over: every worker ends
				close(w.in)
			}
			grown.Wait()
		})
	}
	wake := startCanary(ctx, began)
	for _, w := range workers {
		wg.Go(func() {
			if open {
				w.openLoop(ctx)
			} else {
				w.closedLoop(ctx)
			}
		})
	}
	wg.Wait()
	dispatched.Wait()
	res := Result{Elapsed: time.Since(began), Wake: wake.stop(), Workers: len(workers) + len(extra)}
	parts := make([]PartResult, len(shards))
	for i, ss := range shards {
		parts[i].Tally = ss[0].Tally
		for _, sh := range ss[1:] {
			parts[i].Tally.merge(sh.Tally)
		}
		if open {
			if due, sent := dueBefore(p.pacers[i], b.Soft), p.sent[i].Load(); due > sent {
				parts[i].Missed = due - sent
			}
		}
		res.Missed += parts[i].Missed
	}
	res.Tally, res.Parts = parts[0].Tally, parts
	if len(parts) > 1 {
		res.Tally = NewTally(open)
		for _, pt := range parts {
			res.Tally.merge(pt.Tally)
		}
	}
	if errors.Is(context.Cause(ctx), errTargetDown) {
		res.Stop = results.StopTargetDown
	}
	return res
}

// dueBefore counts the calls a pacer schedules before soft.
func dueBefore(p pace.Constant, soft time.Duration) uint64 {
	n := uint64(soft.Seconds() * p.Offered()) // about; then settle exactly
	for n > 0 && p.Intended(n-1) >= soft {
		n--
	}
	for p.Intended(n) < soft {
		n++
	}
	if p.Calls > 0 && n > p.Calls {
		n = p.Calls
	}
	return n
}
