// Package pace decides when open-loop calls are due. A Pacer is a pure
// function of the time elapsed since the start and the number of calls
// already started: it reads no clock and keeps no state, so it is tested
// with a table of (elapsed, hits) pairs and the caller owns the clock.
//
// The design follows vegeta's lib/pacer.go; unlike vegeta, a Pacer also
// names each call's intended start time (Intended), which the load generator
// uses to measure latency from when a call was due rather than from when it
// was sent (correcting for coordinated omission).
package pace

import (
	"fmt"
	"math"
	"time"
)

// A Pacer schedules calls.
type Pacer interface {
	// Pace returns how long to wait before starting the call numbered hits
	// (0-based: hits calls have started so far) when elapsed has passed since
	// the start. A wait of 0 means the call is due now or overdue: the caller
	// starts it at once, which is how a paced run catches up after a stall.
	// stop reports that no more calls are due.
	Pace(elapsed time.Duration, hits uint64) (wait time.Duration, stop bool)
	// Intended is the time, since the start, at which the call numbered hits
	// was due.
	Intended(hits uint64) time.Duration
}

// Constant paces calls at a fixed rate: call k (0-based) is due at k/Rate
// seconds. The zero values of Duration and Calls mean no bound of that kind.
//
// With Stride > 1 the pacer makes only every Stride-th call of that
// schedule, starting at call Phase: its call k is the schedule's call
// Phase + k·Stride, due at (Phase + k·Stride)/Rate. Stride pacers with
// phases 0..Stride-1 together make exactly the calls of the one schedule,
// at the same times, interleaved rather than coinciding: that is how the
// segments of a run split its rate (loadgen's --segment).
type Constant struct {
	// Rate is calls per second of the whole schedule; it must be > 0 and
	// finite. A pacer with Stride s offers Rate/s.
	Rate float64
	// Stride and Phase pick every Stride-th call of the schedule from call
	// Phase on; Stride 0 means 1 (every call), and Phase must be below it.
	Stride, Phase uint64
	// Duration stops the schedule: no call is due at or after it. Zero means
	// no time bound.
	Duration time.Duration
	// Calls stops the schedule after that many calls. Zero means no count
	// bound.
	Calls uint64
}

// Validate reports a rate or bound that cannot be paced.
func (c Constant) Validate() error {
	if !(c.Rate > 0) || math.IsInf(c.Rate, 0) {
		return fmt.Errorf("pace: rate %v calls/s: must be a positive number", c.Rate)
	}
	if c.Duration < 0 {
		return fmt.Errorf("pace: negative duration %v", c.Duration)
	}
	if c.Phase >= c.stride() {
		return fmt.Errorf("pace: phase %d of stride %d: must be below the stride", c.Phase, c.stride())
	}
	return nil
}

func (c Constant) stride() uint64 { return max(c.Stride, 1) }

// Intended implements Pacer: call hits is due at (Phase + hits·Stride)/Rate
// seconds (hits/Rate with no stride).
func (c Constant) Intended(hits uint64) time.Duration {
	return time.Duration(float64(c.Phase+hits*c.stride()) * float64(time.Second) / c.Rate)
}

// Offered is the rate this pacer offers, calls per second: Rate/Stride.
func (c Constant) Offered() float64 { return c.Rate / float64(c.stride()) }

// Pace implements Pacer.
func (c Constant) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if c.Calls > 0 && hits >= c.Calls {
		return 0, true
	}
	due := c.Intended(hits)
	if c.Duration > 0 && due >= c.Duration {
		return 0, true
	}
	if due <= elapsed {
		return 0, false // due now or overdue: catch up without waiting
	}
	return due - elapsed, false
}
