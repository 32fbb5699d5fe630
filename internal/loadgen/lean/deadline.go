package lean

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Deadlines. The standard engine gives every call a context with its
// deadline (context.WithDeadline: a runtime timer made and stopped per
// call, and the connection's own deadlines set twice more): at wrk's rates
// that bookkeeping cost the lean REST client about 2 µs of its 20 µs per
// call here. The lean callers keep a call's deadline themselves
// (call.DeadlineCaller): a call stores its deadline where the client's
// watchdog, one goroutine that looks every WatchEvery, finds it, and a
// call still running past it is ended as a timeout. A call that ends after
// its deadline but before the watchdog looked is a timeout too, as the
// standard engine's would be; the watchdog only decides when a stuck call
// is cut off: at most WatchEvery after its deadline.
const WatchEvery = 5 * time.Millisecond

// errDeadline is the error of a call past its deadline: a timeout.
var errDeadline = &call.Error{Class: results.ClassTimeout, Err: context.DeadlineExceeded}

// watchdog ends the calls of one client that outlive their deadlines.
type watchdog struct {
	mu      sync.Mutex
	calls   []*inflight
	started bool
	stop    chan struct{}
}

func newWatchdog() *watchdog { return &watchdog{stop: make(chan struct{})} }

// inflight is one caller's call in progress, as the watchdog sees it. abort
// ends the call it is given (under mu: the call is still in flight).
type inflight struct {
	// due is the deadline in flight (UnixNano; 0: no call in flight),
	// atomic for the watchdog to pass by idle callers without the lock: it
	// looks at every caller's, thousands in an open loop that grew. It
	// changes only under mu.
	due     atomic.Int64
	mu      sync.Mutex
	ctx     context.Context // the call's
	aborted bool
	abort   func()
}

// watch registers a caller's calls with the watchdog, starting it.
func (w *watchdog) watch(abort func()) *inflight {
	f := &inflight{abort: abort}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, f)
	if !w.started {
		w.started = true
		go w.run()
	}
	return f
}

func (w *watchdog) run() {
	t := time.NewTicker(WatchEvery)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case now := <-t.C:
			w.mu.Lock()
			calls := w.calls
			w.mu.Unlock()
			for _, f := range calls {
				f.expire(now)
			}
		}
	}
}

// close stops the watchdog.
func (w *watchdog) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
}

// begin starts a call under ctx that must end by deadline.
func (f *inflight) begin(ctx context.Context, deadline time.Time) {
	f.mu.Lock()
	f.ctx, f.aborted = ctx, false
	f.due.Store(deadline.UnixNano())
	f.mu.Unlock()
}

// end ends the call at now; it reports whether the call was aborted (its
// connection or stream is no longer usable) and whether it outlived its
// deadline.
func (f *inflight) end(now time.Time) (aborted, late bool) {
	f.mu.Lock()
	aborted, late = f.aborted, now.UnixNano() > f.due.Load()
	f.ctx = nil
	f.due.Store(0)
	f.mu.Unlock()
	return aborted, late
}

// expire aborts the call in flight if now is past its deadline.
func (f *inflight) expire(now time.Time) {
	if !f.pastDue(now) {
		return
	}
	f.mu.Lock()
	if f.pastDue(now) { // still the same call, or a later one also past due
		f.cancelLocked()
	}
	f.mu.Unlock()
}

// cancel aborts the call in flight under ctx, if any: ctx ended. (A
// context's end is noticed by a goroutine of its own, which may run when
// the caller's next call, under another context, is in flight.)
func (f *inflight) cancel(ctx context.Context) {
	f.mu.Lock()
	if f.due.Load() != 0 && f.ctx == ctx {
		f.cancelLocked()
	}
	f.mu.Unlock()
}

// pastDue reports whether a call is in flight and past its deadline.
func (f *inflight) pastDue(now time.Time) bool {
	due := f.due.Load()
	return due != 0 && now.UnixNano() > due
}

func (f *inflight) cancelLocked() {
	if !f.aborted {
		f.aborted = true
		f.abort()
	}
}

// ctxWatch aborts a caller's call in flight when the context its calls
// run under ends: registered once per context (a phase's), not per call.
type ctxWatch struct {
	ctx  context.Context
	stop func() bool
}

// follow makes f's calls end when ctx does.
func (w *ctxWatch) follow(ctx context.Context, f *inflight) {
	if ctx == w.ctx {
		return
	}
	if w.stop != nil {
		w.stop()
	}
	w.ctx, w.stop = ctx, nil
	if ctx.Done() != nil {
		w.stop = context.AfterFunc(ctx, func() { f.cancel(ctx) })
	}
}

// noDeadline stands for a call with no deadline.
var noDeadline = time.Unix(0, math.MaxInt64) // in 2262: its UnixNano still fits

// caller is a lean call.DeadlineCaller: what a call of every protocol does
// around the protocol's exchange: its timer, ctx's error and the deadline
// (zero: noDeadline) first; the verifier's check of the answer, timed as
// its decode, last.
type caller struct {
	x exchanger
	v verifier
}

// exchanger is a protocol's part of a lean call.
type exchanger interface {
	// exchange sends the call's request and waits for the whole answer
	// until deadline (ctx ends the waits to send), and returns the bytes
	// the verifier checks, the answer's status, media type and framing
	// checked, and when it was in; start is the call's start.
	exchange(ctx context.Context, start, deadline time.Time) (body []byte, in time.Time, err error)
}

// checked is the caller of x's calls whose answers check validates; born
// is the client's start (verifier.born).
func checked(x exchanger, check func([]byte) error, born time.Time) *caller {
	return &caller{x: x, v: verifier{check: check, born: born}}
}

// Call implements call.Caller: a call by ctx's deadline.
func (a *caller) Call(ctx context.Context) (call.Outcome, error) {
	return a.CallBy(ctx, deadlineOf(ctx))
}

// CallBy implements call.DeadlineCaller.
func (a *caller) CallBy(ctx context.Context, deadline time.Time) (call.Outcome, error) {
	timer := call.StartTimer()
	if err := ctx.Err(); err != nil {
		return call.Outcome{}, err
	}
	if deadline.IsZero() {
		deadline = noDeadline
	}
	body, in, err := a.x.exchange(ctx, timer.Start(), deadline)
	if err != nil {
		return call.Outcome{}, err
	}
	timer.ReceivedAt(in)
	err = a.v.verify(body, timer.Start())
	end := time.Now()
	timer.AddDecode(end.Sub(in))
	out := timer.Outcome()
	out.End = end // the worker's end of the call too: one clock read less
	return out, err
}

// deadlineOf is the deadline of a call made with ctx alone (call.Caller's
// Call): ctx's, or none.
func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Time{}
}
