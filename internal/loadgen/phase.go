package loadgen

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

// runPhase runs the callers (one per worker) until the bounds, and merges
// their tallies. In open loop b.iterations counts calls of this schedule.
func runPhase(ctx context.Context, callers []call.Caller, batch int, timeout time.Duration, sched schedule, b bounds) phaseResult {
	parts := make([][]call.Caller, len(callers))
	for i, c := range callers {
		parts[i] = []call.Caller{c}
	}
	return runParts(ctx, parts, batch, timeout, []schedule{sched}, b)
}

// runParts is runPhase over traffic of one or several parts (a mix's
// scenarios): callers[w][i] is worker w's Caller of part i, scheds[i] part
// i's schedule, all open loop when there are several. One dispatcher
// hands out the calls of every part, in order of due time, to the shared
// free workers, and each part has its own tallies.
func runParts(ctx context.Context, callers [][]call.Caller, batch int, timeout time.Duration, scheds []schedule, b bounds) phaseResult {
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
		p.free = newFreeWorkers(len(callers))
	} else if b.iterations > 0 {
		p.remaining = new(atomic.Int64)
		p.remaining.Store(int64(b.iterations))
	}
	shards := make([][]*shard, len(scheds)) // by part
	for i := range shards {
		shards[i] = newShards(len(callers), open)
	}
	workers := make([]*worker, len(callers))
	for i, cs := range callers {
		w := &worker{caller: cs[0], s: shards[0][i%len(shards[0])], p: p}
		if len(cs) > 1 {
			w.parts = make([]workerPart, len(cs))
			for j, c := range cs {
				w.parts[j] = workerPart{c, shards[j][i%len(shards[j])]}
			}
		}
		if open {
			w.in = make(chan tick, 1)
		}
		workers[i] = w
	}
	var wg sync.WaitGroup
	var dispatched sync.WaitGroup
	if open {
		dispatched.Go(func() {
			p.dispatch(ctx)
			for _, w := range workers { // the schedule is over: every worker ends
				close(w.in)
			}
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
	res := phaseResult{elapsed: time.Since(began), wake: wake.stop()}
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
