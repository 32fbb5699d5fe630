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
// µs. With Linux's default 50 µs timer slack a 900 µs nanosleep woke
// 83-102 µs late (p10-p90) on the idle 2-core VM, p99 141 µs: past the
// spin window, so the open-loop dispatcher woke after the due time (p50
// 24-35 µs) and corrected p50 was 35-80 µs over uncorrected. preciseSleep
// therefore sets the thread's slack to 1 ns first: 46-67 µs late, p99 119
// µs, and the dispatcher woke 0.6-3.4 µs late (p50). The 100 µs window
// then leaves a spin of about 45 µs per call (about 10% more client CPU
// per call at 6,000 calls/s: 140 against 127 µs). Nothing is spun when a
// call is already due. A goroutine blocked in nanosleep holds an OS thread
// and its processor, and notices a cancellation within sleepChunk.
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
