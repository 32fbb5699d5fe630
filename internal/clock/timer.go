package clock

import (
	"sync"
	"time"
)

// timerWaiter waits on a Go timer: where no timerfd is to be had.
type timerWaiter struct {
	once      sync.Once
	cancelled chan struct{}
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
