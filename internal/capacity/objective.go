package capacity

import (
	"fmt"
	"time"

	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Objective is what a probe must meet to pass.
type Objective struct {
	// Percentile (e.g. 99 for p99) and Bound: that latency percentile,
	// measured from each call's intended start, must be at most Bound.
	Percentile float64
	Bound      time.Duration
	// MaxErrors is the largest fraction of failed calls (0.001 = 0.1%).
	MaxErrors float64
	// MinAchieved is the fraction of the offered rate that must be
	// achieved (default 0.99).
	MinAchieved float64
}

// Outcome is what a probe measured.
type Outcome struct {
	Offered   float64 // calls/s asked for
	Achieved  float64 // calls/s sent
	Latency   float64 // the objective's percentile, µs, from the intended start
	P50       float64 // µs
	Calls     int64   // successful
	Errors    int64
	Void      bool   // the load generator could not deliver the rate
	VoidWhy   string // e.g. "31% of calls late with a worker free: the load generator woke late"
	Duration  time.Duration
	StopEarly results.StopReason // the probe's cell stopped early (target down)
	// Stalled: the probe is no measurement of the server at this rate, as
	// the target stalled (or the cell is suspect); StallWhy says how, e.g.
	// "3 calls still running 2s after the probe's end".
	Stalled  bool
	StallWhy string
	// ServerCPUUS is the server's CPU per successful call (µs) and
	// ServerCores the CPUs it had, when its metrics were read (0:
	// unknown): a pass at a rate the server's cores cannot have carried
	// is void (Searcher.aboveCPU).
	ServerCPUUS, ServerCores float64
}

// ErrorRate is the failed fraction of attempts.
func (o Outcome) ErrorRate() float64 {
	if n := o.Calls + o.Errors; n > 0 {
		return float64(o.Errors) / float64(n)
	}
	return 0
}

// Verdict of one probe against the objective.
type Verdict string

const (
	Pass Verdict = "pass"
	Fail Verdict = "fail"
	Void Verdict = "void"
)

// Judge says whether an outcome meets the objective, and why not.
func (obj Objective) Judge(o Outcome) (Verdict, string) {
	if o.Stalled {
		// Before anything else: a stalled probe that passes anyway (its
		// abandoned calls not counted) is no more a measurement.
		return Void, StallPrefix + o.StallWhy
	}
	if o.Void {
		return Void, o.VoidWhy
	}
	minAch := obj.MinAchieved
	if minAch == 0 {
		minAch = 0.99
	}
	switch {
	case o.StopEarly != "":
		return Fail, string(o.StopEarly)
	case o.Calls == 0:
		return Fail, "no successful call"
	case o.ErrorRate() > obj.MaxErrors:
		return Fail, "errors " + format.Percent(o.ErrorRate()) + " > " + format.Percent(obj.MaxErrors)
	case o.Achieved < minAch*o.Offered:
		return Fail, "achieved " + format.Rate(o.Achieved) + " of " + format.Rate(o.Offered) + " calls/s"
	case o.Latency > float64(obj.Bound.Microseconds()):
		return Fail, fmt.Sprintf("p%g %s > %s", obj.Percentile, format.US(o.Latency), format.US(float64(obj.Bound.Microseconds())))
	}
	return Pass, ""
}

// StallPrefix starts the why of a probe voided by a stalled target.
const StallPrefix = "the target stalled: "

// String writes the objective as --slo takes it: "p99<=50ms".
func (obj Objective) String() string {
	return fmt.Sprintf("p%g<=%v", obj.Percentile, obj.Bound)
}

// ParseSLO reads --slo: "p99=50ms" (p50, p90, p99, p99.9).
func ParseSLO(s string) (Objective, error) {
	var pct string
	var bound string
	for i := 0; i < len(s); i++ {
		if s[i] == '=' {
			pct, bound = s[:i], s[i+1:]
			break
		}
	}
	if pct == "" || bound == "" || pct[0] != 'p' {
		return Objective{}, fmt.Errorf("--slo %q: want pNN=DURATION, e.g. p99=50ms", s)
	}
	var p float64
	switch pct {
	case "p50":
		p = 50
	case "p90":
		p = 90
	case "p99":
		p = 99
	case "p99.9":
		p = 99.9
	default:
		return Objective{}, fmt.Errorf("--slo %q: percentile %s: want p50, p90, p99 or p99.9", s, pct)
	}
	d, err := time.ParseDuration(bound)
	if err != nil || d <= 0 {
		return Objective{}, fmt.Errorf("--slo %q: bound %q: want a positive duration such as 50ms", s, bound)
	}
	return Objective{Percentile: p, Bound: d}, nil
}
