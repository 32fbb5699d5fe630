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
type Constant struct {
	// Rate is calls per second; it must be > 0 and finite.
	Rate float64
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
	return nil
}

// Intended implements Pacer: call hits is due at hits/Rate seconds.
func (c Constant) Intended(hits uint64) time.Duration {
	return time.Duration(float64(hits) * float64(time.Second) / c.Rate)
}

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
