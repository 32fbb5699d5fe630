// Package clock waits for a due time precisely: the open-loop schedule of
// the load generator, its delay canary and the emulated link's deliveries
// all need to wake on time, without the Go runtime's timer slop and without
// holding a processor while they wait.
package clock

import (
	"runtime"
	"sync"
	"time"
)

// How a Waiter waits. A Go timer (time.Sleep) wakes about 0.6 ms late at
// p50 and 1.1 ms at p99 on a small VM: an idle Go process waits in the
// netpoller with millisecond granularity. The load generator used to sleep
// in raw nanosleeps and spin the last 100 µs, yielding: precise (0.6-3.4 µs
// late), but a goroutine in nanosleep or in a yielding spin keeps its
// processor, and while it does, Go's scheduler looks at no socket: with
// the generator on one CPU (GOMAXPROCS 1) and a free worker always waiting
// (1,024 workers at 2,000 calls/s), answers that had arrived waited for the
// runtime's 10 ms background poll, and small calls measured p50 5.7 ms with
// a server 15% busy.
//
// On Linux a Waiter therefore arms a timerfd (CLOCK_MONOTONIC, with the
// thread's timer slack set to 1 ns first, as the default 50 µs is added to
// its expiry too) and reads it through Go's netpoller: the goroutine parks
// like any reader of a socket, its processor is free for the workers, and
// the same poll that wakes it wakes them. It wakes as late as anything
// woken by the netpoller (a socket's reader too): 24-31 µs at p50 on the
// idle 2-core VM, 100-125 µs under a light load; the load generator
// measures that lateness, not assumes it (its delay canary). A Waiter
// that must be on time spins the last stretch (Spin), holding its
// processor for that stretch only. Elsewhere it waits on a Go timer.
type Waiter struct {
	w       waiter
	stop    chan struct{}
	stopped sync.Once
	done    <-chan struct{}
	spin    time.Duration // see Spin
	// period, when > 0: the due times are a period apart (Every).
	period time.Duration
}

// Spin makes the Waiter wake up to d before each due time and spin the
// rest, yielding its processor between clock reads, so that it returns
// within a few µs of the due time instead of the netpoller's tens of µs.
// The price: while it spins, its processor runs nothing that the network
// readied (Go's scheduler polls the network only when it has nothing else
// to run), so d bounds that delay too. The open-loop dispatcher spins
// (OpenLoopSpin); the canary, which measures the netpoller's own delay,
// does not.
func (w *Waiter) Spin(d time.Duration) *Waiter {
	w.spin = d
	return w
}

// Every tells the Waiter that the due times it will be given are a period
// apart (a constant-rate schedule). On Linux it then arms its
// timer once, periodic, firing at each due time less the spin, instead of
// arming it again before every wait: at 10,000 calls/s re-arming cost the
// open loop 9 µs of its CPU per call here (a timerfd_settime, which on a
// VM reprograms the host's timer). A tick that comes early (the due times
// are rounded to the nanosecond, the period too) arms it again.
func (w *Waiter) Every(period time.Duration) *Waiter {
	w.period = period
	return w
}

// NewWaiter returns a Waiter whose waits give up as soon as done is closed
// (nil: never). Close it after use.
func NewWaiter(done <-chan struct{}) *Waiter {
	w := &Waiter{w: newWaiter(), stop: make(chan struct{}), done: done}
	if done != nil {
		go func() {
			select {
			case <-done:
				w.w.cancel()
			case <-w.stop:
			}
		}()
	}
	return w
}

// Until returns true at or just after due, or false as soon as done is
// closed (or the Waiter closed). Only one goroutine may wait at a time.
func (w *Waiter) Until(due time.Time) bool {
	if w.isDone() {
		return false
	}
	ticked := false // the last wait was a tick of the periodic timer
	for {
		d := time.Until(due) - w.spin
		if d <= 0 {
			break
		}
		if w.period > 0 {
			// A tick that leaves the due time still ahead came early: the
			// grid's rounding drifted, or ticks missed while the caller was
			// busy were pending. The timer is armed again from here.
			rearm := ticked && d < w.period
			if !w.w.every(d%w.period, w.period, rearm) {
				return false
			}
			ticked = true
			continue
		}
		if !w.w.wait(d) {
			return false
		}
	}
	for time.Now().Before(due) {
		runtime.Gosched()
	}
	return !w.isDone()
}

func (w *Waiter) isDone() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// Close releases the Waiter's timer; a wait in progress returns false.
func (w *Waiter) Close() {
	w.stopped.Do(func() {
		close(w.stop)
		w.w.close()
	})
}

// Method describes the wait, for results.Scheduling.Method.
const Method = waitName + ", the waiting goroutine parked in Go's netpoller (its processor free for the workers) until shortly before the due time, then a yielding spin"

// WaitUntil waits once, with a Waiter made for it: for rare waits, where
// opening a timer per wait costs nothing that matters (a dial's emulated
// round trip, the start of a segmented run).
func WaitUntil(done <-chan struct{}, due time.Time) bool {
	w := NewWaiter(done)
	defer w.Close()
	return w.Until(due)
}
