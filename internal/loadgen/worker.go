package loadgen

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/pace"
)

// errCellEnd is the cause of a phase's hard end: calls it cuts short are
// abandoned (dropped and reported), not counted as timeouts.
var errCellEnd = errors.New("cell time bound reached")

// bounds end a phase (the warm-up or the measurement of a cell).
type bounds struct {
	// soft: no call starts after it (and the open-loop schedule ends).
	soft time.Duration
	// hard: calls still running are abandoned; soft plus a grace.
	hard time.Duration
	// iterations: batches to run (closed-loop) or iterations × batch calls
	// to schedule (open-loop); 0 means no count bound.
	iterations int
}

// phase is what the workers of one phase share.
type phase struct {
	batch   int
	timeout time.Duration
	softEnd time.Time
	// closed-loop: batches left to claim, when bounded by count.
	remaining *atomic.Int64
	// open-loop: intended start times, from the dispatcher.
	ticks <-chan time.Time
}

// worker runs calls of one Caller into its own tally.
type worker struct {
	caller call.Caller
	t      *tally
	p      *phase
}

// one makes a call and records it, whatever way the call ends.
func (w *worker) one(ctx context.Context, intended, start time.Time) (rec record) {
	rec.intended, rec.start = intended, start
	cctx, cancel := context.WithDeadline(ctx, start.Add(w.p.timeout)) // no extra clock read
	defer func() {
		rec.end = time.Now()
		if rec.err != nil {
			rec.class = call.Classify(cctx, rec.err)
			if rec.class == call.ClassTimeout && context.Cause(cctx) == errCellEnd {
				rec.class = classAbandoned
			}
		}
		cancel()
		w.t.add(&rec)
	}()
	rec.out, rec.err = w.caller.Call(cctx)
	return rec
}

// closedLoop runs batches back to back: each call starts when the previous
// one ends.
func (w *worker) closedLoop(ctx context.Context) {
	done := ctx.Done()
	for {
		if w.p.remaining != nil && w.p.remaining.Add(-1) < 0 {
			return
		}
		batchStart := time.Now()
		ok := true
		var end time.Time
		for range w.p.batch {
			select {
			case <-done:
				return
			default:
			}
			now := time.Now()
			if !now.Before(w.p.softEnd) {
				return // a batch cut by the time bound is not timed
			}
			rec := w.one(ctx, now, now)
			switch rec.class {
			case "":
			case classCancelled, classAbandoned:
				return
			default:
				ok = false
			}
			end = rec.end
		}
		if ok {
			w.t.batch.add(float64(end.Sub(batchStart)))
		}
	}
}

// openLoop takes scheduled calls from the dispatcher. Every call is
// scheduled on its own; a batch only groups a worker's consecutive calls,
// and its time is the sum of their latencies from their intended starts
// (the time the batch would take run back to back with the queueing each
// call saw), since the pauses between scheduled calls are not the server's.
func (w *worker) openLoop(ctx context.Context) {
	n, ok := 0, true
	var sum time.Duration
	for intended := range w.p.ticks {
		start := time.Now()
		if start.Sub(intended) > LateThreshold {
			w.t.late++
		}
		rec := w.one(ctx, intended, start)
		switch rec.class {
		case "":
			sum += rec.end.Sub(rec.intended)
		case classCancelled, classAbandoned:
			return
		default:
			ok = false
		}
		if n++; n == w.p.batch {
			if ok {
				w.t.batch.add(float64(sum))
			}
			n, ok, sum = 0, true, 0
		}
	}
}

// dispatch sends each call's intended start time to the workers as the
// pacer schedules it. The channel is unbuffered: when every worker is busy
// the dispatcher waits, the call starts late, and its latency from the
// intended start shows the queueing (no coordinated omission). It stops at
// the soft end even when behind, and returns the calls it scheduled.
func dispatch(ctx context.Context, p pace.Pacer, began time.Time, soft time.Duration, ticks chan<- time.Time) (hits uint64) {
	defer close(ticks)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// A tick waiting for a free worker must not be handed out after the
	// soft end: no call starts after it.
	softEnd := time.NewTimer(time.Until(began.Add(soft)))
	defer softEnd.Stop()
	for {
		elapsed := time.Since(began)
		if elapsed >= soft {
			return hits
		}
		wait, stop := p.Pace(elapsed, hits)
		if stop {
			return hits
		}
		if wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-softEnd.C:
				return hits
			case <-ctx.Done():
				return hits
			}
			continue
		}
		select {
		case ticks <- began.Add(p.Intended(hits)):
			hits++
		case <-softEnd.C:
			return hits
		case <-ctx.Done():
			return hits
		}
	}
}

// phaseResult is a phase's merged tally and how long it took.
type phaseResult struct {
	t       *tally
	elapsed time.Duration
	// open-loop: calls due before the soft end that were never sent.
	missed uint64
}

// runPhase runs the callers (one per worker) until the bounds, and merges
// their tallies.
func runPhase(ctx context.Context, callers []call.Caller, batch int, timeout time.Duration, rate float64, b bounds) phaseResult {
	began := time.Now()
	ctx, cancel := context.WithDeadlineCause(ctx, began.Add(b.hard), errCellEnd)
	defer cancel()
	p := &phase{batch: batch, timeout: timeout, softEnd: began.Add(b.soft)}
	open := rate > 0
	var (
		pacer     pace.Constant
		scheduled = make(chan uint64, 1)
	)
	if open {
		pacer = pace.Constant{Rate: rate, Duration: b.soft, Calls: uint64(b.iterations) * uint64(batch)}
		ticks := make(chan time.Time)
		p.ticks = ticks
		go func() { scheduled <- dispatch(ctx, pacer, began, b.soft, ticks) }()
	} else if b.iterations > 0 {
		p.remaining = new(atomic.Int64)
		p.remaining.Store(int64(b.iterations))
	}
	workers := make([]*worker, len(callers))
	var wg sync.WaitGroup
	for i, c := range callers {
		w := &worker{caller: c, t: newTally(open), p: p}
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			if open {
				w.openLoop(ctx)
			} else {
				w.closedLoop(ctx)
			}
		}()
	}
	wg.Wait()
	res := phaseResult{t: workers[0].t, elapsed: time.Since(began)}
	for _, w := range workers[1:] {
		res.t.merge(w.t)
	}
	if open {
		cancel() // unblock the dispatcher if every worker stopped early
		sent := <-scheduled
		if due := dueBefore(pacer, b.soft); due > sent {
			res.missed = due - sent
		}
	}
	return res
}

// dueBefore counts the calls a pacer schedules before soft.
func dueBefore(p pace.Constant, soft time.Duration) uint64 {
	n := uint64(soft.Seconds() * p.Rate) // about; then settle exactly
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
