package loadgen

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"
)

// How an open-loop worker waits for a call's due time without putting the
// Go runtime's timer slop (about 0.6 ms p50, 1.1 ms p99 on a small VM: an
// idle Go process waits in the netpoller with millisecond granularity) into
// the latency measured from the intended start:
//
//  1. a long wait first sleeps on a Go timer (cancellable) until
//     timerMargin before the due time;
//  2. then a raw nanosleep (see preciseSleep; about 0.1 ms late) until
//     spinWindow before it;
//  3. then the worker spins, yielding the processor between clock reads,
//     until the due time.
//
// The spin costs CPU on a machine that may also run the server: with a
// 150 µs window it is at most 150 µs per call (4.5% of a core at 300
// calls/s), and nothing when the call is already due. Step 2 cannot be
// cancelled; it is never longer than timerMargin.
const (
	timerMargin = 2 * time.Millisecond
	spinWindow  = 150 * time.Microsecond
)

// waitMethod describes the wait, for results.Scheduling.Method.
var waitMethod = fmt.Sprintf("%s to %v before the due time, then spin (yielding)", sleepName, spinWindow)

// waitUntil returns at or just after due. It returns false, early, when ctx
// ends first.
func waitUntil(ctx context.Context, due time.Time) bool {
	d := time.Until(due)
	if d > timerMargin+time.Millisecond {
		t := time.NewTimer(d - timerMargin)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
		d = time.Until(due)
	}
	if d > spinWindow {
		preciseSleep(d - spinWindow)
	}
	for time.Now().Before(due) {
		runtime.Gosched()
	}
	return ctx.Err() == nil
}

// schedulingSamples is how many waits measureScheduling makes.
const schedulingSamples = 200

// measureScheduling makes n waits of the open-loop method, 1 ms apart, with
// no load, and returns their lateness (how long after the due time each
// returned), sorted. It takes about n milliseconds.
func measureScheduling(ctx context.Context, n int) []time.Duration {
	late := make([]time.Duration, 0, n)
	began := time.Now()
	for k := 1; k <= n; k++ {
		due := began.Add(time.Duration(k) * time.Millisecond)
		if !waitUntil(ctx, due) {
			break
		}
		late = append(late, time.Since(due))
	}
	slices.Sort(late)
	return late
}

// quantile of sorted durations, nearest rank.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
