package capacity

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Plan is a capacity search over every cell of a load generator config.
type Plan struct {
	// Base is the run's config: target, protocols, scenarios and every
	// condition; its rate, repeats, duration and concurrency are set per
	// probe.
	Base plan.Config
	// Objective and Settings apply to every series.
	Objective Objective
	Settings  Settings
	// Probe and ProbeWarmup are each probe's measured time and warm-up.
	Probe, ProbeWarmup time.Duration
	// ConfirmProbe is the measured time of the confirmation and boundary
	// probes at the found rate (0: Probe): a rate found at the boundary by
	// short probes must hold over a run as long as the one a user would
	// check it with.
	ConfirmProbe time.Duration
	// Pause is the idle time between probes, so one probe's backlog does
	// not spill into the next.
	Pause time.Duration
	// MaxTime bounds the whole search; 0: unbounded.
	MaxTime time.Duration
	// Workers is the number of open-loop workers per probe; 0 chooses it
	// from the rate and the bound (Little's law with headroom).
	Workers int
	// OnProbe, when set, is called after every probe (progress).
	OnProbe func(series results.CellKey, p Probe)
	// Repeat is how many times the whole search runs (0, 1: once); the
	// series then report the median found rate and the range.
	Repeat int
	// OnSearch, when set, is called as each of several searches starts
	// (i of k, from 1).
	OnSearch func(i, k int)

	// NotServed, set by Run, are the scenarios and protocols the target
	// did not serve when probed: not searched.
	NotServed []results.NotServed

	session *session.Session // during Run: every probe measures through it
}

// workers is the number of workers a probe at rate has: Plan.Workers, or
// AutoWorkers.
func (p *Plan) workers(rate float64) int {
	if p.Workers > 0 {
		return p.Workers
	}
	return AutoWorkers(rate, p.Objective.Bound)
}

// AutoWorkers is the number of workers a probe at rate needs under a
// latency bound: enough for every call in flight at the bound (Little's
// law), twice over, within [8, 1024].
func AutoWorkers(rate float64, bound time.Duration) int {
	n := int(math.Ceil(2 * rate * bound.Seconds()))
	return min(max(n, 8), 1024)
}

// ConfirmFills is how many times over a confirmation (and each re-check)
// must fill the probe's workers with calls: a backlog that grows by a few
// calls a second shows only once the workers have been filled many times
// (REST found 27,917 small calls/s confirmed in 5 s, and a fresh 5 s run
// at that rate then achieved 23,597 with p99 980 ms).
const ConfirmFills = 50

// ConfirmLength is the measured time of a confirmation probe at rate with
// workers: at least d (--confirm-probe) and long enough for ConfirmFills
// times the workers' worth of calls, at most MaxConfirmLength.
func ConfirmLength(d time.Duration, rate float64, workers int) time.Duration {
	if rate > 0 {
		need := time.Duration(float64(ConfirmFills*workers) / rate * float64(time.Second)).Round(100 * time.Millisecond)
		d = max(d, min(need, MaxConfirmLength))
	}
	return d
}

// MaxConfirmLength bounds ConfirmLength: a few workers at a low rate would
// otherwise ask for minutes.
const MaxConfirmLength = 30 * time.Second

// Series are the cells searched: one per scenario, protocol and condition
// (batches do not matter in open loop; the first is used).
func (p *Plan) Series() []results.CellKey {
	base := p.Base
	base.Rate, base.Repeat = 1, 1
	base.Concurrency = []int{1}
	base.Batches = []int{1}
	var out []results.CellKey
	for _, k := range base.Cells() {
		k.RateRequested = 0
		out = append(out, k)
	}
	return out
}

// Run searches every series Repeat times and returns what it found, in
// series order, with every probe. Each repetition searches every series
// again from the start, their probes interleaved step by step, so drift
// of the machine hits the series alike; a series whose search failed (the
// target stalled) is not searched again. MaxTime is shared out: each
// repetition may use up to its share, plus what earlier ones left.
func (p *Plan) Run(ctx context.Context) ([]results.Capacity, error) {
	series := p.Series()
	if len(series) == 0 {
		return nil, ErrNoSeries
	}
	// One session for every probe: the target's health, contract and
	// metrics are checked once, and the open-loop wait calibrated once. A
	// target that stalls later fails its probes as a stall.
	sess, err := session.Open(ctx, p.Base)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	p.session = sess
	defer func() { p.session = nil }()
	// What the target does not serve is not searched, and said so.
	p.NotServed = sess.NotServed()
	series = slices.DeleteFunc(series, func(k results.CellKey) bool { return !sess.Serves(k) })
	k := max(1, p.Repeat)
	found := make([][]Result, len(series))
	start := time.Now()
	for rep := 0; rep < k && err == nil; rep++ {
		var idx []int // the series searched in this repetition
		for i := range series {
			if n := len(found[i]); n == 0 || found[i][n-1].Failure == "" {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			break
		}
		if p.OnSearch != nil && k > 1 {
			p.OnSearch(rep+1, k)
		}
		var deadline time.Time
		stopped := fmt.Sprintf("stopped by --max-time %v: best bracket so far", p.MaxTime)
		if p.MaxTime > 0 {
			deadline = start.Add(p.MaxTime * time.Duration(rep+1) / time.Duration(k))
			if k > 1 {
				stopped = fmt.Sprintf("stopped by --max-time %v (%v per search of %d): best bracket so far", p.MaxTime, p.MaxTime/time.Duration(k), k)
			}
		}
		searchers := make([]*Searcher, len(idx))
		for j := range searchers {
			searchers[j] = NewSearcher(p.Objective, p.Settings)
		}
		err = runUntil(ctx, searchers, deadline, stopped, p.Pause, func(ctx context.Context, j int, rate float64) (Outcome, error) {
			d := p.Probe
			_, phase := searchers[j].Next()
			if phase == Confirm || phase == Boundary {
				d = ConfirmLength(max(p.ConfirmProbe, p.Probe), rate, p.workers(rate))
			}
			o, err := p.probe(ctx, series[idx[j]], rate, d)
			if err == nil && p.OnProbe != nil {
				v, why := p.Objective.Judge(o)
				p.OnProbe(series[idx[j]], Probe{Phase: phase, Outcome: o, Verdict: v, Why: why})
			}
			return o, err
		})
		for j, s := range searchers {
			found[idx[j]] = append(found[idx[j]], s.Result())
		}
	}
	out := make([]results.Capacity, len(series))
	for i := range series {
		out[i] = p.Capacity(series[i], found[i], k)
	}
	return out, err
}

// Validate reports the first bad setting of the search (its Base is
// plan.Config.Validate's), as one line that starts with the setting's
// name as the capacity command's flag has it.
func (p *Plan) Validate() error {
	switch {
	case p.MaxTime < 0:
		return fmt.Errorf("max-time %v: must not be negative", p.MaxTime)
	case p.Probe <= 0:
		return fmt.Errorf("probe %v: must be positive", p.Probe)
	case p.ConfirmProbe <= 0:
		return fmt.Errorf("confirm-probe %v: must be positive", p.ConfirmProbe)
	case p.ProbeWarmup < 0:
		return fmt.Errorf("probe-warmup %v: must not be negative", p.ProbeWarmup)
	case p.Pause < 0:
		return fmt.Errorf("pause %v: must not be negative", p.Pause)
	case !(p.Settings.Start >= 1):
		return fmt.Errorf("start %v: must be at least 1 call/s", p.Settings.Start)
	}
	return nil
}

// DefaultMaxTime is the capacity command's bound of a whole search: for
// every series (protocol, scenario and condition) and repetition, the
// time of BudgetProbes probes and BudgetLongProbes confirmation-length
// ones, each with its warm-up and the pause after it. With the default
// probe times that is 1m31s a series: 3m2s for REST and gRPC side by
// side. A fixed 2 minutes per scenario, shared by its protocols, stopped
// searches on the 2-core VM before their end: small REST and gRPC took
// 65-75 s each (13-15 probes of 2 s and 4-6 of 5 s, retries of a noisy
// machine's hiccups among them), and a longer --probe got no more time.
func (p *Plan) DefaultMaxTime() time.Duration {
	confirm := p.ConfirmProbe
	if confirm <= 0 {
		confirm = p.Probe
	}
	per := BudgetProbes*(p.Probe+p.ProbeWarmup+p.Pause) + BudgetLongProbes*(confirm+p.ProbeWarmup+p.Pause)
	return (time.Duration(len(p.Series())*max(1, p.Repeat)) * per).Round(time.Second)
}

// A search's share of the default --max-time (DefaultMaxTime): a
// search takes 4-8 probes to grow, 4-6 to bisect to 5%, their retries, a
// confirmation and three boundary probes, and a confirmation that fails
// adds a bisection and another confirmation.
const (
	BudgetProbes     = 20
	BudgetLongProbes = 6
)
