package loadgen

import (
	"slices"

	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
)

// RaceDetector lets the external tests skip what the race detector skews.
const RaceDetector = raceDetector

// WithoutPlanEntry takes field's entry out of the plan's own table
// (planDimensions) until restore is called: a dimension then has only its
// results.Dimensions entry.
func WithoutPlanEntry(field string) (restore func()) {
	saved := planDimensions
	planDimensions = slices.DeleteFunc(slices.Clone(planDimensions), func(d planDimension) bool { return d.field == field })
	return func() { planDimensions = saved }
}

// ClientOptions are the options the client of cfg's cell k is opened with.
func ClientOptions(cfg Config, k results.CellKey) call.Options {
	r := &runner{cfg: cfg.withDefaults()}
	return r.options(cellSpec{CellKey: k}, &wire.Dialer{}, 1)
}
