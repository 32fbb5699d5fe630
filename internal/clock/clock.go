// Package clock waits for a due time precisely: the open-loop schedule of
// the load generator and the emulated link's deliveries both need to wake
// on time, without the Go runtime's timer slop.
package clock

import (
	"fmt"
	"runtime"
	"time"
)

// How WaitUntil waits for a due time without putting the
// Go runtime's timer slop (about 0.6 ms p50, 1.1 ms p99 on a small VM: an
// idle Go process waits in the netpoller with millisecond granularity) into
// the latency measured from the intended start:
//
//  1. a wait longer than timerAbove first sleeps on a Go timer
//     (cancellable, costs no thread) until sleepChunk before the due time;
//  2. then raw nanosleeps (see preciseSleep; about 0.1 ms late), at most
//     sleepChunk each with a look at done between them, until spinWindow
//     before it;
//  3. then it spins, yielding the processor between clock reads,
//     until the due time.
//
// Costs, measured here with a no-op call: a Go timer park and wake-up cost
// 100-300 µs of CPU each (the runtime spins looking for work), so timers
// are kept for long waits, where they are rare; a nanosleep costs a few
// µs. The nanosleep wakes about 80 µs late (Linux's 50 µs default timer
// slack plus the wake-up), so a 100 µs window leaves a spin of about 20 µs
// per call: at 2000 waits/s, 8-11% of a core in all (the same as nanosleep
// alone) with p50 lateness 0.2 µs and p90 7-12 µs, where a 150 µs window
// cost 19-20% for p90 under 1 µs. Nothing is spun when a call is already
// due. A worker blocked in nanosleep holds an OS thread, and notices a
// cancellation within sleepChunk.
const (
	timerAbove = 50 * time.Millisecond
	sleepChunk = 5 * time.Millisecond
	spinWindow = 100 * time.Microsecond
)

// Method describes the wait, for results.Scheduling.Method.
var Method = fmt.Sprintf("%s to %v before the due time, then spin (yielding)", sleepName, spinWindow)

// WaitUntil returns true at or just after due, or false as soon as done is
// closed (noticed within sleepChunk).
func WaitUntil(done <-chan struct{}, due time.Time) bool {
	if d := time.Until(due); d > timerAbove {
		t := time.NewTimer(d - sleepChunk)
		select {
		case <-t.C:
		case <-done:
			t.Stop()
			return false
		}
	}
	for {
		d := time.Until(due) - spinWindow
		if d <= 0 {
			break
		}
		select {
		case <-done:
			return false
		default:
		}
		preciseSleep(min(d, sleepChunk))
	}
	for time.Now().Before(due) {
		runtime.Gosched()
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}
