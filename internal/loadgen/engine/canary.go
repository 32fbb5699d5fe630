package engine

import (
	"context"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meteorbench/meteorbench/internal/clock"
)

// canaryEvery is the canary's period: 200 wake-ups a second cost the
// generator about 1-2 ms of CPU a second, and give a 600 ms window over a
// hundred samples.
const canaryEvery = 5 * time.Millisecond

// canary measures, while a phase runs, how late the load generator runs a
// goroutine that the netpoller wakes: a timer armed for a known time is
// read through the netpoller (clock.Waiter), exactly as an answer arriving
// on a socket is, and its lateness is how long an answer that had arrived
// would have waited for its reader. Nothing else in the generator can see
// that wait: an answer's latency includes it, and the server's part of it
// is unknown. A busy, starved or descheduled generator shows here first.
type canary struct {
	H    *hdrhistogram.Histogram
	done sync.WaitGroup
	end  context.CancelFunc
}

// startCanary starts the canary until stop (or ctx's end).
func startCanary(ctx context.Context, began time.Time) *canary {
	ctx, end := context.WithCancel(ctx)
	c := &canary{H: newHist(), end: end}
	c.done.Go(func() {
		w := clock.NewWaiter(ctx.Done())
		defer w.Close()
		for k := 1; ; k++ {
			due := began.Add(time.Duration(k) * canaryEvery)
			if now := time.Now(); now.After(due) {
				// A wake-up so late that it passed the next due times: each
				// one it overran is a sample of that lateness, as a reader
				// woken then would have waited too.
				recordDuration(c.H, now.Sub(due))
				continue
			}
			if !w.Until(due) {
				return
			}
			recordDuration(c.H, time.Since(due))
		}
	})
	return c
}

// stop ends the canary and returns its lateness histogram.
func (c *canary) stop() *hdrhistogram.Histogram {
	c.end()
	c.done.Wait()
	return c.H
}
