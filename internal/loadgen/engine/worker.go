package engine

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/meteorbench/meteorbench/internal/clock"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/pace"
	"github.com/meteorbench/meteorbench/internal/rusage"
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

// After a transport (or protocol) error a worker waits before its next call: from
// TransportBackoffMin, doubling with each further such error, at most
// TransportBackoffMax; any other outcome resets it. Over TargetDownAfter a
// worker thus makes at most about TargetDownAfter/TransportBackoffMax + 7
// calls to a dead target.
const (
	TransportBackoffMin = 1 * time.Millisecond
	TransportBackoffMax = 50 * time.Millisecond
)

// LateThreshold is how far behind its intended start an open-loop call may
// be sent before it counts as late (Cell.LateCalls). A millisecond is far
// above timer and scheduling jitter on an idle machine and far below any
// backlog worth reporting.
const LateThreshold = time.Millisecond

// CellGrace is the most a phase waits, after its soft end, for calls still
// running (Bounds.Hard is Soft plus it); then they are abandoned. It never
// exceeds the per-call timeout.
const CellGrace = 2 * time.Second

// bounds end a phase (the warm-up or the measurement of a cell).
type Bounds struct {
	// soft: no call starts after it (and the open-loop schedule ends).
	Soft time.Duration
	// hard: calls still running are abandoned; soft plus a grace.
	Hard time.Duration
	// iterations: batches to run (closed-loop) or calls to schedule
	// (open-loop); 0 means no count bound.
	Iterations int
}

// phase is what the workers of one phase share.
type phase struct {
	Batch   int
	timeout time.Duration
	began   time.Time
	softEnd time.Time
	// closed-loop: batches left to claim, when bounded by count.
	remaining *atomic.Int64
	// open-loop: the schedule of each part of the traffic (one, or a
	// mix's scenarios), the due calls the dispatcher hands out, and the
	// calls started of each part.
	pacers []pace.Constant
	free   *freeWorkers
	sent   []atomic.Uint64
	// grow, when set, adds a free worker when a call is due and every
	// worker is busy (an open loop that sizes itself); false at its bound.
	grow func() (*worker, bool)
	// downSince is when (ns since began, +1) the first transport error after
	// the last other outcome ended; 0 when the last outcome was not one.
	downSince atomic.Int64
	stop      context.CancelCauseFunc
}

// worker runs calls of one Caller into its shard of the phase's tallies.
// In open loop with mixed traffic it has a Caller and a shard per part
// (parts; part 0 is caller and s).
type worker struct {
	caller  call.Caller
	s       *shard
	Parts   []workerPart
	in      chan tick // open loop: the call the dispatcher hands this worker
	p       *phase
	backoff time.Duration // the next wait after a transport error
}

// workerPart is a worker's Caller and shard for one part of mixed traffic.
type workerPart struct {
	caller call.Caller
	s      *shard
}

// one makes a call and records it, whatever way the call ends.
func (w *worker) one(ctx context.Context, intended, start time.Time, pre record) record {
	return w.oneOf(ctx, workerPart{w.caller, w.s}, intended, start, pre)
}

// oneOf makes a call of part wp and records it in wp's shard. A
// call.DeadlineCaller keeps the deadline itself and runs under ctx; any
// other Caller gets a context of its own with the deadline.
func (w *worker) oneOf(ctx context.Context, wp workerPart, intended, start time.Time, pre record) record {
	rec := pre
	rec.intended, rec.start = intended, start
	deadline := start.Add(w.p.timeout) // no extra clock read
	cctx, cancel := ctx, context.CancelFunc(nil)
	if dc, ok := wp.caller.(call.DeadlineCaller); ok {
		rec.out, rec.err = dc.CallBy(ctx, deadline)
	} else {
		cctx, cancel = context.WithDeadline(ctx, deadline)
		rec.out, rec.err = wp.caller.Call(cctx)
	}
	if rec.end = rec.out.End; rec.end.IsZero() {
		rec.end = time.Now()
	}
	if rec.err != nil {
		rec.class = call.Classify(cctx, rec.err)
		if rec.class.Timeout() && context.Cause(cctx) == errCellEnd {
			rec.class = classAbandoned
		}
	}
	if cancel != nil {
		cancel()
	}
	wp.s.add(&rec)
	return rec
}

// settle handles what follows a call: a dropped call ends the worker; a
// transport or protocol error backs the worker off, and transport errors
// stop the phase once the target has been unreachable for TargetDownAfter. It reports whether the worker
// goes on.
func (w *worker) settle(ctx context.Context, rec *record) bool {
	switch {
	case rec.class == classCancelled || rec.class == classAbandoned:
		return false
	case !rec.class.Unreachable() && !rec.class.Protocol():
		w.backoff = 0
		if w.p.downSince.Load() != 0 {
			w.p.downSince.Store(0)
		}
		return true
	case rec.class.Protocol():
		// The target answered, wrongly: it is not down, but the
		// connection it broke is redialled, so the worker backs off as
		// after a transport error instead of redialling in a tight loop.
		if w.p.downSince.Load() != 0 {
			w.p.downSince.Store(0)
		}
	default:
		now := int64(rec.end.Sub(w.p.began)) + 1
		since := w.p.downSince.Load()
		if since == 0 && !w.p.downSince.CompareAndSwap(0, now) {
			since = w.p.downSince.Load() // another worker's error came first
		}
		if since != 0 && time.Duration(now-since) >= TargetDownAfter {
			w.p.stop(errTargetDown)
			return false
		}
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
		var batchStart, end time.Time
		ok := true
		for i := range w.p.Batch {
			select {
			case <-done:
				return
			default:
			}
			now := time.Now()
			if !now.Before(w.p.softEnd) {
				return // a batch cut by the time bound is not timed
			}
			if i == 0 {
				batchStart = now // one clock read less per batch: a small call's is a tenth of a microsecond here
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

// OpenLoopSpinShare bounds the dispatcher's spin at high rates: spin per
// call times calls per second stays under this share of a core. At 100
// µs a call, 10,000 calls/s spun the whole core the generator had (it
// spent 99 µs of CPU per small call, a closed loop at that rate 50),
// and the calls the spin was there to time started late behind it. Up to
// 500 calls/s the spin is OpenLoopSpin; at 10,000 it is 5 µs.
const OpenLoopSpinShare = 0.05

// openLoopSpin is the dispatcher's spin at rate calls/s.
func openLoopSpin(rate float64) time.Duration {
	return min(OpenLoopSpin, time.Duration(OpenLoopSpinShare/rate*float64(time.Second)))
}

// EndGrace is how long after the soft end the dispatcher's wait for a
// call due before it may end, the call still sent: a coarse tick
// (clock.MinTick) ends a wait up to that long after its due time, and a
// wait cut at the soft end itself lost the last call due before it in 2
// of 10 windows of 0.1 s at 10,000 calls/s ("1 scheduled call was never
// sent"). A free worker is not waited for past the soft end.
const EndGrace = clock.MinTick

// tick is one scheduled call as the dispatcher hands it out: when it was
// due, when the dispatcher's wait for it ended, and its part of the
// traffic (0 but in a mix).
type tick struct {
	due, woke time.Time
	part      int
}

// dispatch hands out the schedule: one goroutine waits for each due time
// precisely (a clock.Waiter, parked in the netpoller so that it never keeps
// the workers from their answers) and gives the call to the most recently
// freed worker (freeWorkers). When every worker is busy the dispatcher
// waits, the call starts late, and its latency from the intended start
// shows the queueing (no coordinated omission). Only this goroutine sleeps
// precisely, so the workers block on their channels and leave the
// processors free, however many there are. No call is handed out after
// the soft end, but one due before it that the dispatcher's timer woke
// for within EndGrace after it; a call due before the soft end but not
// sent by then is never sent (missed).
func (p *phase) dispatch(ctx context.Context) {
	soft, cancel := context.WithDeadline(ctx, p.softEnd)
	defer cancel()
	grace, cancelGrace := context.WithDeadline(ctx, p.softEnd.Add(EndGrace))
	defer cancelGrace()
	rate := 0.0
	for _, pc := range p.pacers {
		rate += pc.Offered()
	}
	w := clock.NewWaiter(grace.Done()).Spin(openLoopSpin(rate))
	if len(p.pacers) == 1 { // calls a period apart: a periodic timer
		w.Every(time.Duration(float64(time.Second) / rate))
	}
	defer w.Close()
	next := make([]uint64, len(p.pacers)) // each part's next call
	gate := newGrowGate(time.Now(), runtime.GOMAXPROCS(0), rusage.CPU)
	for {
		part, due, ok := p.nextDue(next)
		if !ok || !due.Before(p.softEnd) || !w.Until(due) {
			return
		}
		woke := time.Now()
		free, ok := p.free.take()
		if !ok && p.grow != nil && gate.allows(woke) {
			free, ok = p.grow()
		}
		if !ok {
			if free, ok = p.free.get(soft.Done()); !ok {
				return
			}
		}
		free.in <- tick{due: due, woke: woke, part: part} // it waits for it: never blocks
		next[part]++
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

// nextDue is the earliest due call among the parts' next ones (next[i] is
// part i's next call): its part and due time; ok is false when every
// part's schedule has ended. With one part it is that part's next call.
func (p *phase) nextDue(next []uint64) (part int, due time.Time, ok bool) {
	for i, pc := range p.pacers {
		if _, stop := pc.Pace(0, next[i]); stop {
			continue
		}
		if d := p.began.Add(pc.Intended(next[i])); !ok || d.Before(due) {
			part, due, ok = i, d, true
		}
	}
	return part, due, ok
}

// openLoop makes the calls the dispatcher hands out. Open-loop calls are
// not grouped in batches: the pauses between them are the schedule's, not
// the server's.
func (w *worker) openLoop(ctx context.Context) {
	p := w.p
	p.free.put(w)
	for t := range w.in {
		start := time.Now()
		p.sent[t.part].Add(1)
		rec := record{Handoff: start.Sub(t.woke)}
		if start.Sub(t.due) > LateThreshold {
			rec.Late = true
			// The dispatcher itself woke late: the lateness is the load
			// generator's own, not queueing behind a slow server.
			rec.LateWoken = t.woke.Sub(t.due) > LateThreshold
		}
		wp := workerPart{w.caller, w.s}
		if t.part > 0 {
			wp = w.Parts[t.part]
		}
		rec = w.oneOf(ctx, wp, t.due, start, rec)
		if !w.settle(ctx, &rec) {
			return // not freed again: the dispatcher hands it nothing more
		}
		p.free.put(w)
	}
}
