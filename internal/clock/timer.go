package clock

import (
	"sync"
	"time"
)

// timerWaiter waits on a Go timer: where no timerfd is to be had.
type timerWaiter struct {
	once      sync.Once
	cancelled chan struct{}
	// A periodic timer's (arm, tick): the next tick and the period.
	next   time.Time
	period time.Duration
}

// arm makes the timer periodic: its first tick after first, then one
// every period.
func (w *timerWaiter) arm(first, period time.Duration) {
	w.period, w.next = period, time.Now().Add(first)
}

// tick waits for the next tick of the periodic timer.
func (w *timerWaiter) tick() bool {
	d := time.Until(w.next)
	w.next = w.next.Add(w.period)
	for !w.next.After(time.Now()) { // missed ticks are one, as a timerfd's
		w.next = w.next.Add(w.period)
	}
	if d <= 0 {
		return true
	}
	return w.wait(d)
}

func newTimerWaiter() *timerWaiter { return &timerWaiter{cancelled: make(chan struct{})} }

func (w *timerWaiter) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.cancelled:
		return false
	}
}

func (w *timerWaiter) cancel() { w.once.Do(func() { close(w.cancelled) }) }
