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
	fd     int
	f      *os.File // nil: the Go timer fallback
	t      *timerWaiter
	period time.Duration // the periodic timer armed by every; 0: none
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
	w.period = 0 // a one-shot timer now
	var expirations [8]byte
	_, err := w.f.Read(expirations[:])
	return err == nil
}

// every waits for the next tick of a periodic timer, arming it first
// (first: how long until its first tick) when it is not armed with this
// period or rearm says so. false when cancelled or closed.
func (w *waiter) every(first, period time.Duration, rearm bool) bool {
	if w.f == nil {
		return w.t.wait(first)
	}
	if rearm || w.period != period {
		unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
		spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(first), 1)), Interval: unix.NsecToTimespec(int64(period))}
		if err := unix.TimerfdSettime(w.fd, 0, &spec, nil); err != nil {
			return false
		}
		w.period = period
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
