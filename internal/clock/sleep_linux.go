package clock

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

const waitName = "timerfd (CLOCK_MONOTONIC, timer slack 1 ns)"

// waiter is a timerfd read through the netpoller, or a Go timer where the
// system refuses a timerfd.
type waiter struct {
	fd int
	f  *os.File // nil: the Go timer fallback
	t  *timerWaiter
}

func newWaiter() waiter {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return waiter{t: newTimerWaiter()}
	}
	// A non-blocking descriptor makes a pollable *os.File: Read parks the
	// goroutine in the netpoller until the timer expires.
	return waiter{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}
}

// wait waits about d (it may return early: Until checks the clock); false
// when cancelled or closed.
func (w *waiter) wait(d time.Duration) bool {
	if w.f == nil {
		return w.t.wait(d)
	}
	// The slack is per thread, and this goroutine may arm from any thread.
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(w.fd, 0, &spec, nil); err != nil {
		return false
	}
	var expirations [8]byte
	_, err := w.f.Read(expirations[:])
	return err == nil
}

// arm makes the timer periodic: its first tick after first, then one
// every period. false when the system refused.
func (w *waiter) arm(first, period time.Duration) bool {
	if w.f == nil {
		w.t.arm(first, period)
		return true
	}
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(first), 1)), Interval: unix.NsecToTimespec(int64(period))}
	return unix.TimerfdSettime(w.fd, 0, &spec, nil) == nil
}

// tick waits for the periodic timer's next tick, or returns at once for
// one that came while nobody waited. false when cancelled or closed.
func (w *waiter) tick() bool {
	if w.f == nil {
		return w.t.tick()
	}
	var expirations [8]byte
	_, err := w.f.Read(expirations[:])
	return err == nil
}

// cancel makes the wait in progress, and every later one, return false.
func (w *waiter) cancel() {
	if w.f == nil {
		w.t.cancel()
		return
	}
	w.f.SetReadDeadline(time.Unix(1, 0))
}

func (w *waiter) close() {
	if w.f == nil {
		w.t.cancel()
		return
	}
	w.f.Close()
}
