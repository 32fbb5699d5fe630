package session

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

// phaseResult is a phase's merged tally and how long it took.
type phaseResult struct {
	t       *tally
	elapsed time.Duration
	// open-loop: calls due before the soft end that were never sent.
	missed uint64
	// stop is results.StopTargetDown when the target stopped answering, else "".
	stop results.StopReason
	// workers is how many workers ran the phase, the ones an open loop
	// that sizes itself added included.
	workers int
	// wake is the canary's lateness: how late goroutines woken by the
	// netpoller ran during the phase (canary.go).
	wake *hdrhistogram.Histogram
	// parts is each part's tally and count of missed calls (t is all of
	// them together): one part but in a mix.
	parts []partResult
}

// partResult is one part of a mixed phase.
type partResult struct {
	t      *tally
	missed uint64
}

// schedule is a phase's open-loop schedule: every stride-th call, from call
// phase on, of the schedule at rate calls/s (a segment's share, see
// segment.go); rate 0 is closed loop.
type schedule struct {
	rate          float64
	phase, stride uint64
}

// runPhase runs the callers of one part until the bounds (runParts).
func runPhase(ctx context.Context, cs *callers, batch int, timeout time.Duration, sched schedule, b bounds) phaseResult {
	return runParts(ctx, cs, batch, timeout, []schedule{sched}, b)
}

// runParts runs the callers until the bounds, and merges their tallies,
// over traffic of one or several parts (a mix's scenarios):
// cs.list[w][i] is worker w's Caller of part i, scheds[i] part i's
// schedule, all open loop when there are several. One dispatcher hands
// out the calls of every part, in order of due time, to the shared free
// workers, adding workers as cs grows (an open loop that sizes itself),
// and each part has its own tallies. In open loop b.iterations counts
// calls of each schedule.
func runParts(ctx context.Context, cs *callers, batch int, timeout time.Duration, scheds []schedule, b bounds) phaseResult {
	began := time.Now()
	ctx, cancel := context.WithDeadlineCause(ctx, began.Add(b.hard), errCellEnd)
	defer cancel()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	p := &phase{batch: batch, timeout: timeout, began: began, softEnd: began.Add(b.soft), stop: stop}
	open := scheds[0].rate > 0
	if open {
		for _, sc := range scheds {
			p.pacers = append(p.pacers, pace.Constant{Rate: sc.rate, Duration: b.soft, Calls: uint64(b.iterations), Stride: sc.stride, Phase: sc.phase})
		}
		p.sent = make([]atomic.Uint64, len(scheds))
		p.free = newFreeWorkers(len(cs.list))
	} else if b.iterations > 0 {
		p.remaining = new(atomic.Int64)
		p.remaining.Store(int64(b.iterations))
	}
	nShards := len(cs.list)
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
			w.parts = make([]workerPart, len(callers))
			for j, c := range callers {
				w.parts[j] = workerPart{c, shards[j][i%len(shards[j])]}
			}
		}
		if open {
			w.in = make(chan tick, 1)
		}
		return w
	}
	workers := make([]*worker, len(cs.list))
	for i, callers := range cs.list {
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
	res := phaseResult{elapsed: time.Since(began), wake: wake.stop(), workers: len(workers) + len(extra)}
	parts := make([]partResult, len(shards))
	for i, ss := range shards {
		parts[i].t = ss[0].t
		for _, sh := range ss[1:] {
			parts[i].t.merge(sh.t)
		}
		if open {
			if due, sent := dueBefore(p.pacers[i], b.soft), p.sent[i].Load(); due > sent {
				parts[i].missed = due - sent
			}
		}
		res.missed += parts[i].missed
	}
	res.t, res.parts = parts[0].t, parts
	if len(parts) > 1 {
		res.t = newTally(open)
		for _, pt := range parts {
			res.t.merge(pt.t)
		}
	}
	if errors.Is(context.Cause(ctx), errTargetDown) {
		res.stop = results.StopTargetDown
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
