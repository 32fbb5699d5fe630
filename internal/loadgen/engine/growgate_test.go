package engine

import (
	"testing"
	"time"
)

// The grow gate closes for a window in which the generator's CPU time
// reached GrowBusy of its cores, opens again after one under it, and
// decides only once a whole window has passed.
func TestGrowGate(t *testing.T) {
	var cpu time.Duration
	t0 := time.Unix(1000, 0)
	g := newGrowGate(t0, 2, func() time.Duration { return cpu })
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	if !g.allows(at(time.Millisecond)) {
		t.Fatal("closed before a window passed")
	}
	cpu += 2 * GrowWindow * 95 / 100 // 95% of 2 cores
	if g.allows(at(GrowWindow)) {
		t.Error("open after a window at 95% of the cores")
	}
	cpu += GrowWindow // 50% of 2 cores, but the window is not over
	if g.allows(at(GrowWindow + GrowWindow/2)) {
		t.Error("reopened within a window")
	}
	if !g.allows(at(2 * GrowWindow)) {
		t.Error("closed after a window at 50% of the cores")
	}
}
