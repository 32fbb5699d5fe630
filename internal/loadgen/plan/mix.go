package plan

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// validateMix reports what a mix cannot be run with.
func (c Config) validateMix() error {
	if len(c.Mix) == 0 {
		if slices.Contains(c.Scenarios, results.MixScenario) {
			return errors.New("scenario mix: give the traffic with Mix (run --mix)")
		}
		return nil
	}
	for _, p := range c.Mix {
		if !(p.Rate > 0) || math.IsInf(p.Rate, 0) {
			return fmt.Errorf("mix %s: %s at %v calls/s: every rate must be above 0", c.Mix, p.Scenario, p.Rate)
		}
	}
	switch {
	case len(c.Scenarios) > 0 && !slices.Equal(c.Scenarios, []api.Scenario{results.MixScenario}):
		return fmt.Errorf("mix %s: the scenarios are the mix's, not %s", c.Mix, format.Names(c.Scenarios))
	case c.Rate != 0 && math.Abs(c.Rate-c.Mix.Total()) > 1e-9*c.Mix.Total():
		return fmt.Errorf("mix %s: the rate is the mix's (%v calls/s), not %v", c.Mix, c.Mix.Total(), c.Rate)
	case c.Iterations > 0:
		return fmt.Errorf("mix %s: bounded by duration, not iterations", c.Mix)
	case !c.Segment.Whole():
		return fmt.Errorf("mix %s: cannot be split into segments", c.Mix)
	}
	return nil
}

// MixWorkers is the number of workers a mix gets when none is asked for:
// its calls of 200 ms in flight (Little's law), within [16, 1024], so that
// slow calls (a large REST answer over a link, a saturated server) do not
// make the others wait for a worker: the server saturates before the
// workers run out. The dispatcher hands calls to the most recently freed
// worker, so the idle ones cost nothing but their connection.
func MixWorkers(m results.Mix) int {
	return min(max(int(math.Ceil(m.Total()*0.2)), 16), 1024)
}
