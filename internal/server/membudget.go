package server

// One memory budget for the whole server.
//
// Every other limit is per connection (a gRPC connection's send budget,
// limits.go; an HTTP/2 REST connection's answers, h2limits.go; one HTTP/1.1
// answer at a time per connection), and the connection gate (conngate.go)
// bounds how many connections are open, not what they hold together, so
// without this a few dozen clients that ask for large answers and do not
// read them could take any amount of memory (issue 20: 50 REST clients of
// ?records=100000 reached 3.5 GiB, 40 gRPC connections of zero-window
// streams were OOM-killed in 1 GiB).
//
// memBudget counts, in bytes, what the server's large calls hold: answers
// queued for a client or being written (gRPC list and stream answers until
// the socket takes them, list answers in buffers sized to them, codec.go;
// REST answers' pieces while they are written) and request bodies being
// read and decoded, plus callOverhead for each of those calls while it
// runs (its goroutine and stream, which a call waiting on a client that
// does not read also holds), plus connCost for each open connection
// (conngate.go). A REST call that would take the count over the limit
// waits at most budgetWait for others to finish, then is refused (503); a
// gRPC call is refused (RESOURCE_EXHAUSTED) at once by the tap (grpc.go),
// before grpc-go starts its goroutine, and its answer's charge waits at
// most budgetWait. /healthz, /metrics, gRPC health and the small
// GetVersion call are never charged, so they are served whatever the count.

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const (
	// budgetWait is how long a call waits for the budget before it is
	// refused.
	budgetWait = time.Second
	// callOverhead is what one large call is charged for itself while it
	// runs: its goroutine (8-32 KiB of stack) and, on gRPC, its stream's
	// buffers and headers.
	callOverhead = 32 << 10
	// budgetShare is the share of Config.MemoryLimit the budget gets: the
	// rest is the server's own data (up to about 60 MB with the generated
	// records), the garbage collector's headroom, and what the budget does
	// not see (per-connection buffers, kernel socket memory is not ours).
	budgetShare = 4 // a quarter
	// decodeFactor is what a request body costs per byte read: the body
	// itself, and what it decodes into (measured for the 1000 records:
	// protobuf 2.8x its size, JSON 0.44x).
	decodeFactor = 4
)

// callsShare: the gRPC calls admitted by the tap (grpc.go), at
// callOverhead each, may hold at most half of the budget, so that calls
// waiting for a client that does not read cannot leave no room for any
// answer: 8 connections of 1000 zero-window list calls otherwise took the
// whole budget in call charges, and every call then waited a second for
// room for its answer that could not come, and was refused.
const callsShare = 2

// memBudget is the server-wide count. A nil *memBudget admits everything.
type memBudget struct {
	limit   int64
	used    atomic.Int64
	calls   atomic.Int64 // gRPC calls admitted by admitCall and not yet ended
	refused atomic.Int64 // calls refused after waiting (for /metrics)
	waiters atomic.Int32
	mu      sync.Mutex
	changed chan struct{} // closed (and replaced) on release while someone waits

	// For relieve: bytes admitted since the last relief; calls of any
	// kind started, and in flight (begin, end).
	admitted atomic.Int64
	started  atomic.Int64
	active   atomic.Int64
}

func newMemBudget(limit int64) *memBudget {
	return &memBudget{limit: limit, changed: make(chan struct{})}
}

// tryAcquire charges n if the count stays within the limit, or if nothing
// is charged at all (an answer larger than the whole budget is served
// alone rather than never).
func (m *memBudget) tryAcquire(n int64) bool {
	if m == nil {
		return true
	}
	for {
		u := m.used.Load()
		if u+n > m.limit && u > 0 {
			return false
		}
		if m.used.CompareAndSwap(u, u+n) {
			m.admitted.Add(n)
			return true
		}
	}
}

// admitCall charges callOverhead for a gRPC call, if the calls admitted
// hold less than their share of the budget and the budget has room;
// endCall gives it back.
func (m *memBudget) admitCall() bool {
	if m == nil {
		return true
	}
	if m.calls.Add(1) > m.limit/callsShare/callOverhead {
		m.calls.Add(-1)
		return false
	}
	if !m.tryAcquire(callOverhead) {
		m.calls.Add(-1)
		return false
	}
	return true
}

func (m *memBudget) endCall() {
	if m == nil {
		return
	}
	m.calls.Add(-1)
	m.release(callOverhead)
}

// spent reports whether the whole budget is charged.
func (m *memBudget) spent() bool { return m != nil && m.used.Load() >= m.limit }

// force charges n without waiting: memory the server already holds.
func (m *memBudget) force(n int64) {
	if m != nil && n != 0 {
		m.used.Add(n)
	}
}

// release gives n bytes back and wakes the waiters.
func (m *memBudget) release(n int64) {
	if m == nil || n == 0 {
		return
	}
	m.used.Add(-n)
	if m.waiters.Load() > 0 {
		m.mu.Lock()
		close(m.changed)
		m.changed = make(chan struct{})
		m.mu.Unlock()
	}
}

// wait registers a waiter and returns the channel the next release closes;
// call done when no longer waiting. Take it before trying, so no release
// between the try and the wait is missed.
func (m *memBudget) wait() (ch <-chan struct{}, done func()) {
	m.waiters.Add(1)
	m.mu.Lock()
	ch = m.changed
	m.mu.Unlock()
	return ch, func() { m.waiters.Add(-1) }
}

// acquire charges n, waiting at most wait for room, until ctx is done.
func (m *memBudget) acquire(ctx context.Context, n int64, wait time.Duration) error {
	if m.tryAcquire(n) {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		ch, done := m.wait()
		if m.tryAcquire(n) {
			done()
			return nil
		}
		select {
		case <-ch:
			done()
		case <-ctx.Done():
			done()
			return ctx.Err()
		case <-t.C:
			done()
			return m.busy()
		}
	}
}

// begin counts a call of any kind (REST, gRPC, /metrics...) as started and
// in flight, until end: relieve waits for none.
func (m *memBudget) begin() {
	if m != nil {
		m.started.Add(1)
		m.active.Add(1)
	}
}

func (m *memBudget) end() {
	if m != nil {
		m.active.Add(-1)
	}
}

// Returning memory after a burst. Go's soft memory limit makes the
// collector work harder near the limit, but an idle server allocates
// nothing, so nothing collects the garbage a burst left (until the forced
// collection every two minutes) and its pages stay resident. relieve, run
// while the server serves, looks once a second: when at least a 32nd of
// the budget was admitted since the last relief, no call of any kind
// started or ran for reliefQuiet and almost nothing is held, it has the
// runtime collect and return its free memory to the system (runtime.GC,
// for the pools, then debug.FreeOSMemory: two collections, on no call's
// path), at most once every reliefInterval. Between the cells of a
// benchmark this can run once the server has been idle for reliefQuiet;
// not while small calls go on after large ones (a `small` cell right after
// a `large` one: TestReliefWaitsForEveryCall), whose latencies the
// collections would land in.
const (
	reliefQuiet    = 2 * time.Second
	reliefInterval = 10 * time.Second
)

func (m *memBudget) relieve(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last time.Time
	quiet, started := time.Now(), m.started.Load() // since when no call came, and the count then
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if n := m.started.Load(); n != started || m.active.Load() > 0 {
				quiet, started = now, n
				continue
			}
			if m.admitted.Load() >= m.limit/32 && m.used.Load() <= m.limit/64 &&
				now.Sub(quiet) >= reliefQuiet && now.Sub(last) >= reliefInterval {
				m.admitted.Store(0)
				// Two collections: the first only moves the pooled
				// buffers (sync.Pool) to their victim cache.
				runtime.GC()
				debug.FreeOSMemory()
				last = time.Now()
			}
		}
	}
}

// busy counts a refusal and returns its error.
func (m *memBudget) busy() error {
	m.refused.Add(1)
	return &busyError{used: m.used.Load(), limit: m.limit}
}

// busyError is a call refused because the budget stayed spent.
type busyError struct{ used, limit int64 }

func (e *busyError) Error() string {
	return fmt.Sprintf("server busy: its memory budget (%d MiB) is held by answers other clients have not read yet; try again later",
		e.limit>>20)
}

// grpcBusy is the gRPC form of an error from acquire.
func grpcBusy(err error) error {
	if be, ok := err.(*busyError); ok {
		return status.Error(codes.ResourceExhausted, be.Error())
	}
	return status.FromContextError(err).Err()
}
