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
	// period, when > 0: the due times are a period apart (Every), and a
	// periodic timer ticks lead before each; grid is a tick's time.
	period time.Duration
	lead   time.Duration
	grid   time.Time
	coarse bool // ticks every MinTick, off the due times' grid
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
// apart (a constant-rate schedule). On Linux it then arms its timer once,
// periodic, instead of before every wait: at 10,000 calls/s re-arming cost
// the open loop 9 µs of its CPU per call here (a timerfd_settime, which on
// a VM reprograms the host's timer). The timer ticks a lead before each
// due time, and the lead learns the median of how late the netpoller
// hands a tick over (40-90 µs here under load): half the waits end a
// little late, half spin a little. A due time off the timer's grid (the
// schedule's rounding drifts; the lead moved) arms it again.
//
// A period shorter than MinTick ticks every MinTick instead, and a wait
// ends at the first tick at or past its due time less the spin: at most
// MinTick late, and the calls due between two ticks go out together.
func (w *Waiter) Every(period time.Duration) *Waiter {
	w.period, w.lead, w.coarse = period, w.spin, period < MinTick
	if w.coarse {
		w.period = MinTick
	}
	return w
}

// MinTick is the shortest period of Every's timer: 4,000 ticks a second
// at most. Each wake-up of an idle process costs it far more than the
// read of its timer: on the 2-core VM 10,000 ticks a second with nothing
// else to do took half a core (51 µs each), and reading a periodic
// timerfd re-arms it (15 µs). Sending the calls due since the last tick
// together turns several wake-ups into one for the generator, and for the
// server its answers reach. Small REST calls, lean engine, server and
// generator pinned to a CPU each, 5 s, two interleaved rounds, generator
// CPU per call (server's): at 10,000 calls/s, a tick every call (100 µs)
// 75 µs (54-55), every 250 µs 52-54 (40-45), every 500 µs 46-49 (36-37);
// at 20,000 calls/s, every 100 µs 45 (39), 250 µs 33-35 (33-36), 500 µs
// 31-32 (30-32). A closed loop costs 55 µs at one worker (9,600-9,800
// calls/s) and 30 µs at two (23,700). The price is precision: a call
// starts up to MinTick after its due time, in the latency from the
// intended start (p50 146 µs at 10,000 calls/s ticking every call, 200
// µs every 250 µs, 374 µs every 500 µs) and in the cell's
// generator_delay_us, never hidden.
const MinTick = 250 * time.Microsecond

// Periodic waits: the lead learns the median wake-up lateness by LeadStep
// a tick (a stochastic approximation of the median), within
// [spin, min(MaxLead, period/2)]; a due time more than GridSlack off the
// armed grid arms the timer again.
const (
	LeadStep  = time.Microsecond
	MaxLead   = 200 * time.Microsecond
	GridSlack = 5 * time.Microsecond
)

// untilTick waits with the periodic timer until lead before due (the loop
// in Until spins the rest).
func (w *Waiter) untilTick(due time.Time) bool {
	for {
		tick := due.Add(-w.lead)
		d := time.Until(tick)
		if d <= 0 {
			return true
		}
		if w.grid.IsZero() || !w.coarse && offGrid(tick.Sub(w.grid), w.period) > GridSlack {
			if !w.w.arm(d, w.period) {
				return false
			}
			w.grid = tick
		}
		if !w.w.tick() {
			return false
		}
		now := time.Now()
		if now.Before(tick) {
			continue // a tick missed while the caller was busy, or (coarse) one before the due time
		}
		if w.coarse {
			return true
		}
		// How late this tick was handed over: the lead follows its median.
		if now.Sub(tick) > w.lead {
			w.lead = min(w.lead+LeadStep, MaxLead, w.period/2)
		} else {
			w.lead = max(w.lead-LeadStep, w.spin)
		}
		return true
	}
}

// offGrid is how far x is from the nearest multiple of period.
func offGrid(x, period time.Duration) time.Duration {
	r := x % period
	if r < 0 {
		r += period
	}
	return min(r, period-r)
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
	if w.period > 0 {
		if !w.untilTick(due) {
			return false
		}
	} else {
		for {
			d := time.Until(due) - w.spin
			if d <= 0 {
				break
			}
			if !w.w.wait(d) {
				return false
			}
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
