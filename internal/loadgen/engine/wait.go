package engine

import (
	"context"
	"slices"
	"time"

	"github.com/meteorbench/meteorbench/internal/clock"
)

// WaitUntil returns at or just after due (clock.WaitUntil). It returns
// false, early, when ctx ends first. For rare waits; a loop of waits keeps
// one clock.Waiter.
func WaitUntil(ctx context.Context, due time.Time) bool {
	return clock.WaitUntil(ctx.Done(), due) && ctx.Err() == nil
}

// SchedulingSamples is how many waits MeasureScheduling makes.
const SchedulingSamples = 200

// MeasureScheduling makes n waits of the open-loop method, 1 ms apart, with
// no load, and returns their lateness (how long after the due time each
// returned), sorted. It takes about n milliseconds.
func MeasureScheduling(ctx context.Context, n int) []time.Duration {
	w := clock.NewWaiter(ctx.Done()).Spin(OpenLoopSpin)
	defer w.Close()
	late := make([]time.Duration, 0, n)
	began := time.Now()
	for k := 1; k <= n; k++ {
		due := began.Add(time.Duration(k) * time.Millisecond)
		if !w.Until(due) {
			break
		}
		late = append(late, time.Since(due))
	}
	slices.Sort(late)
	return late
}

// quantile of sorted durations, nearest rank.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
