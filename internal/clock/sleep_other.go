//go:build !linux

package clock

import "time"

const waitName = "Go timer"

type waiter struct{ t *timerWaiter }

func newWaiter() waiter                     { return waiter{t: newTimerWaiter()} }
func (w *waiter) wait(d time.Duration) bool { return w.t.wait(d) }
func (w *waiter) cancel()                   { w.t.cancel() }
func (w *waiter) arm(first, period time.Duration) bool {
	w.t.arm(first, period)
	return true
}
func (w *waiter) tick() bool { return w.t.tick() }
func (w *waiter) close()     { w.t.cancel() }
