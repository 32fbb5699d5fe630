package loadgen

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meteorbench/meteorbench/internal/clock"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/pace"
	"github.com/meteorbench/meteorbench/internal/results"
)

// errCellEnd is the cause of a phase's hard end: calls it cuts short are
// errors of class results.ClassAbandoned (the target stalled them), not
// timeouts of their own.
var errCellEnd = errors.New("cell time bound reached")

// errTargetDown is the cause of a phase stopped because the target stopped
// answering (see TargetDownAfter); calls it cuts short are dropped.
var errTargetDown = errors.New("target down")

// TargetDownAfter is how long a phase goes on while its calls end in
// nothing but transport errors (results.ErrorClass.Unreachable) before it stops with
// Cell.StopReason = results.StopTargetDown. Any other outcome, success or
// error, restarts the clock. A second is far beyond a connection hiccup and
// short enough that a dead server is not hammered for the rest of the cell;
// whether the run goes on is then decided by the health check after the
// cell.
const TargetDownAfter = 1 * time.Second

// After a transport error a worker waits before its next call: from
// TransportBackoffMin, doubling with each further transport error, at most
// TransportBackoffMax; any other outcome resets it. Over TargetDownAfter a
// worker thus makes at most about TargetDownAfter/TransportBackoffMax + 7
// calls to a dead target.
const (
	TransportBackoffMin = 1 * time.Millisecond
	TransportBackoffMax = 50 * time.Millisecond
)

// bounds end a phase (the warm-up or the measurement of a cell).
type bounds struct {
	// soft: no call starts after it (and the open-loop schedule ends).
	soft time.Duration
	// hard: calls still running are abandoned; soft plus a grace.
	hard time.Duration
	// iterations: batches to run (closed-loop) or calls to schedule
	// (open-loop); 0 means no count bound.
	iterations int
}

// phase is what the workers of one phase share.
type phase struct {
	batch   int
	timeout time.Duration
	began   time.Time
	softEnd time.Time
	// closed-loop: batches left to claim, when bounded by count.
	remaining *atomic.Int64
	// open-loop: the schedule, the due calls the dispatcher hands out, and
	// the calls started.
	pacer pace.Constant
	free  *freeWorkers
	sent  atomic.Uint64
	// grow, when set, adds a free worker when a call is due and every
	// worker is busy (an open loop that sizes itself); false at its bound.
	grow func() (*worker, bool)
	// downSince is when (ns since began, +1) the first transport error after
	// the last other outcome ended; 0 when the last outcome was not one.
	downSince atomic.Int64
	stop      context.CancelCauseFunc
}

// worker runs calls of one Caller into its shard of the phase's tallies.
type worker struct {
	caller  call.Caller
	s       *shard
	in      chan tick // open loop: the call the dispatcher hands this worker
	p       *phase
	backoff time.Duration // the next wait after a transport error
}

// one makes a call and records it, whatever way the call ends.
func (w *worker) one(ctx context.Context, intended, start time.Time, pre record) (rec record) {
	rec = pre
	rec.intended, rec.start = intended, start
	cctx, cancel := context.WithDeadline(ctx, start.Add(w.p.timeout)) // no extra clock read
	defer func() {
		rec.end = time.Now()
		if rec.err != nil {
			rec.class = call.Classify(cctx, rec.err)
			if rec.class.Timeout() && context.Cause(cctx) == errCellEnd {
				rec.class = classAbandoned
			}
		}
		cancel()
		w.s.add(&rec)
	}()
	rec.out, rec.err = w.caller.Call(cctx)
	return rec
}

// settle handles what follows a call: a dropped call ends the worker; a
// transport error backs the worker off, or stops the phase once the target
// has been unreachable for TargetDownAfter. It reports whether the worker
// goes on.
func (w *worker) settle(ctx context.Context, rec *record) bool {
	switch {
	case rec.class == classCancelled || rec.class == classAbandoned:
		return false
	case !rec.class.Unreachable():
		w.backoff = 0
		if w.p.downSince.Load() != 0 {
			w.p.downSince.Store(0)
		}
		return true
	}
	now := int64(rec.end.Sub(w.p.began)) + 1
	since := w.p.downSince.Load()
	if since == 0 && !w.p.downSince.CompareAndSwap(0, now) {
		since = w.p.downSince.Load() // another worker's error came first
	}
	if since != 0 && time.Duration(now-since) >= TargetDownAfter {
		w.p.stop(errTargetDown)
		return false
	}
	w.backoff = min(max(2*w.backoff, TransportBackoffMin), TransportBackoffMax)
	t := time.NewTimer(w.backoff)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
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
			rec := w.one(ctx, now, now, record{})
			if rec.class != "" {
				ok = false
			}
			if !w.settle(ctx, &rec) {
				return
			}
			end = rec.end
		}
		if ok {
			w.s.addBatch(end.Sub(batchStart))
		}
	}
}

// OpenLoopSpin is how long before a due time the dispatcher stops waiting
// in the netpoller and spins (clock.Waiter.Spin). The netpoller alone woke
// it 100-125 µs late under a light load here (200 small calls/s), and that
// lateness lands in the latency from the intended start. A 50 µs spin
// left a gap of 30-53 µs between the latency from the intended start and
// from the send; 100 µs, 14-24 µs. It holds the processor from the
// network for at most those 100 µs per call (the netpoller's own lateness
// eats into the window).
const OpenLoopSpin = 100 * time.Microsecond

// tick is one scheduled call as the dispatcher hands it out: when it was
// due and when the dispatcher's wait for it ended.
type tick struct{ due, woke time.Time }

// dispatch hands out the schedule: one goroutine waits for each due time
// precisely (a clock.Waiter, parked in the netpoller so that it never keeps
// the workers from their answers) and gives the call to the most recently
// freed worker (freeWorkers). When every worker is busy the dispatcher
// waits, the call starts late, and its latency from the intended start
// shows the queueing (no coordinated omission). Only this goroutine sleeps
// precisely, so the workers block on their channels and leave the
// processors free, however many there are. No call is handed out after
// the soft end; a call due before it but not sent by then is never sent
// (missed).
func (p *phase) dispatch(ctx context.Context) {
	soft, cancel := context.WithDeadline(ctx, p.softEnd)
	defer cancel()
	w := clock.NewWaiter(soft.Done()).Spin(OpenLoopSpin)
	defer w.Close()
	for k := uint64(0); ; k++ {
		if _, stop := p.pacer.Pace(0, k); stop {
			return
		}
		due := p.began.Add(p.pacer.Intended(k))
		if !due.Before(p.softEnd) || !w.Until(due) {
			return
		}
		woke := time.Now()
		free, ok := p.free.take()
		if !ok && p.grow != nil {
			free, ok = p.grow()
		}
		if !ok {
			if free, ok = p.free.get(soft.Done()); !ok {
				return
			}
		}
		free.in <- tick{due: due, woke: woke} // it waits for it: never blocks
		// Yield the processor at once, so the worker just readied runs on
		// it now instead of waiting to be stolen by another thread while
		// this one sleeps in a system call. Without it the hand-off put
		// 40-180 µs (p10-p99) between the due time and the send: corrected
		// p50 30-110 µs over uncorrected at 200-300 calls/s here; with it,
		// 4-48 µs, and the calls themselves were no slower. (Handing the
		// call out early and letting the worker sleep to the due time
		// closed the gap too, but made every call 80-120 µs slower: a
		// second thread asleep in nanosleep holds the other processor.)
		runtime.Gosched()
	}
}

// openLoop makes the calls the dispatcher hands out. Open-loop calls are
// not grouped in batches: the pauses between them are the schedule's, not
// the server's.
func (w *worker) openLoop(ctx context.Context) {
	p := w.p
	p.free.put(w)
	for t := range w.in {
		start := time.Now()
		p.sent.Add(1)
		rec := record{handoff: start.Sub(t.woke)}
		if start.Sub(t.due) > LateThreshold {
			rec.late = true
			// The dispatcher itself woke late: the lateness is the load
			// generator's own, not queueing behind a slow server.
			rec.lateWoken = t.woke.Sub(t.due) > LateThreshold
		}
		rec = w.one(ctx, t.due, start, rec)
		if !w.settle(ctx, &rec) {
			return // not freed again: the dispatcher hands it nothing more
		}
		p.free.put(w)
	}
}

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
func runPhase(ctx context.Context, cs *callers, batch int, timeout time.Duration, sched schedule, b bounds) phaseResult {
	rate := sched.rate
	began := time.Now()
	ctx, cancel := context.WithDeadlineCause(ctx, began.Add(b.hard), errCellEnd)
	defer cancel()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	p := &phase{batch: batch, timeout: timeout, began: began, softEnd: began.Add(b.soft), stop: stop}
	open := rate > 0
	if open {
		p.pacer = pace.Constant{Rate: rate, Duration: b.soft, Calls: uint64(b.iterations), Stride: sched.stride, Phase: sched.phase}
		p.free = newFreeWorkers(len(cs.list))
	} else if b.iterations > 0 {
		p.remaining = new(atomic.Int64)
		p.remaining.Store(int64(b.iterations))
	}
	nShards := len(cs.list)
	if open && cs.max > 0 {
		nShards = cs.max
	}
	shards := newShards(nShards, open)
	workers := make([]*worker, len(cs.list))
	for i, c := range cs.list {
		workers[i] = &worker{caller: c, s: shards[i%len(shards)], p: p}
		if open {
			workers[i].in = make(chan tick, 1)
		}
	}
	var wg sync.WaitGroup
	var dispatched sync.WaitGroup
	if open {
		// The workers grow adds are the dispatcher's own: it starts them,
		// and ends them with the others.
		var grown sync.WaitGroup
		var extra []*worker
		if cs.max > 0 {
			p.grow = func() (*worker, bool) {
				c, ok := cs.grow()
				if !ok {
					return nil, false
				}
				w := &worker{caller: c, s: shards[(len(workers)+len(extra))%len(shards)], p: p, in: make(chan tick, 1)}
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
	res := phaseResult{t: shards[0].t, elapsed: time.Since(began), wake: wake.stop()}
	for _, sh := range shards[1:] {
		res.t.merge(sh.t)
	}
	if errors.Is(context.Cause(ctx), errTargetDown) {
		res.stop = results.StopTargetDown
	}
	if open {
		if due, sent := dueBefore(p.pacer, b.soft), p.sent.Load(); due > sent {
			res.missed = due - sent
		}
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
