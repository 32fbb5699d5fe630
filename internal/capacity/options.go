package capacity

import (
	"errors"
	"fmt"
	"time"

	"github.com/meteorbench/meteorbench/internal/flagvalue"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
)

// Options are the capacity command's own options in its flags' words
// (--slo, --max-errors, ...); Plan turns them and run's config into the
// search, checked. The messages name the flags.
type Options struct {
	SLO       string // "p99=50ms"
	MaxErrors string // a percentage of attempts, "0.1%"
	Precision string // the bracket's width to stop at, "5%"
	MaxTime   time.Duration
	Probe     time.Duration
	// ConfirmProbe is the measured time of the confirmation and boundary
	// probes.
	ConfirmProbe time.Duration
	ProbeWarmup  time.Duration
	Pause        time.Duration
	Start        float64 // first offered rate, calls/s
	// WorkersGiven: base.Concurrency was asked for (--concurrency), one
	// worker count for every probe; else it follows the rate.
	WorkersGiven bool
}

// Plan is the search of o over base, the condition run's flags give,
// checked by its Validate. A zero MaxTime is the default.
func (o Options) Plan(base plan.Config) (*Plan, error) {
	obj, err := ParseSLO(o.SLO)
	if err != nil {
		return nil, err
	}
	if obj.MaxErrors, err = flagvalue.ParsePercent("--max-errors", o.MaxErrors, 0, 100); err != nil {
		return nil, err
	}
	precision, err := flagvalue.ParsePercent("--precision", o.Precision, 0.1, 100)
	if err != nil {
		return nil, err
	}
	p := &Plan{
		Base:         base,
		Objective:    obj,
		Settings:     Settings{Start: o.Start, Precision: precision},
		Probe:        o.Probe,
		ConfirmProbe: o.ConfirmProbe,
		ProbeWarmup:  o.ProbeWarmup,
		Pause:        o.Pause,
		MaxTime:      o.MaxTime,
		Repeat:       base.Repeat,
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("--%w", err)
	}
	if o.WorkersGiven {
		if len(base.Concurrency) != 1 {
			return nil, errors.New("--concurrency: give one worker count (or none: it follows the rate)")
		}
		p.Workers = base.Concurrency[0]
	}
	if p.MaxTime == 0 {
		p.MaxTime = p.DefaultMaxTime()
	}
	return p, nil
}
