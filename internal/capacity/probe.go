package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/meteorbench/meteorbench/internal/loadgen"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Plan is a capacity search over every cell of a load generator config.
type Plan struct {
	// Base is the run's config: target, protocols, scenarios and every
	// condition; its rate, repeats, duration and concurrency are set per
	// probe.
	Base loadgen.Config
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

	session *loadgen.Session // during Run: every probe measures through it
}

// Void thresholds: a failing probe is void when the load generator, not
// the server, could not deliver the rate.
const (
	// VoidLate is the fraction of calls that may start late with a worker
	// free in time (the generator woke late) before the probe is void.
	VoidLate = 0.01
	// VoidMinCalls is the fewest late calls that void a probe: on a short
	// probe 1% is a handful, within a noisy machine's scheduling jitter.
	VoidMinCalls = 5
)

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
	sess, err := loadgen.Open(ctx, p.Base)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	p.session = sess
	defer func() { p.session = nil }()
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
			if (phase == Confirm || phase == Boundary) && p.ConfirmProbe > 0 {
				d = p.ConfirmProbe
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

// probe measures one open-loop cell at rate.
func (p *Plan) probe(ctx context.Context, k results.CellKey, rate float64, d time.Duration) (Outcome, error) {
	k.RateRequested = rate
	workers := p.workers(rate)
	k.Concurrency = workers
	cfg := p.Base.Only(k)
	cfg.Duration, cfg.Iterations = d, 0
	cfg.Warmup = p.ProbeWarmup
	if cfg.Warmup == 0 {
		cfg.Warmup = -1
	}
	cfg.Repeat = 1
	cfg.Progress, cfg.Measured, cfg.Started = nil, nil, nil
	res, err := p.session.Run(ctx, cfg)
	if res == nil || len(res.Cells) == 0 {
		if err == nil {
			err = errors.New("no cell measured")
		}
		return Outcome{}, err
	}
	c := &res.Cells[0]
	o := Outcome{
		Offered:   rate,
		Achieved:  achieved(c, d),
		Latency:   c.LatencyUS.At(p.Objective.Percentile),
		P50:       c.LatencyUS.P50,
		Calls:     c.Calls,
		Errors:    c.Errors,
		Duration:  time.Duration(c.DurationS * float64(time.Second)),
		StopEarly: c.StopReason,
	}
	o.Stalled, o.StallWhy = stalled(c, p.Base.Timeout)
	// Only a failure can be the generator's: latency counts from each
	// call's intended start, so a late start makes a pass harder, never
	// easier, and a probe that passed anyway stands.
	if v, _ := p.Objective.Judge(o); v == Fail {
		o.Void, o.VoidWhy = void(c, workers, p.Objective)
	}
	if errors.Is(err, loadgen.ErrInterrupted) {
		return o, err
	}
	// A cell that failed (the target went away) is a failed probe, not the
	// end of the search: the health check decides the next probe.
	return o, nil
}

// achieved is the rate a probe delivered: its calls over the schedule's
// window. The cell's own RateAchieved divides by the time until the last
// call in flight ended, which adds the drain to every probe (a 20 ms
// drain is 1% of a 2 s probe: "achieved 396 of 400" at any rate).
func achieved(c *results.Cell, window time.Duration) float64 {
	if window <= 0 || c.DurationS <= 0 {
		return c.RateAchieved
	}
	return float64(c.Calls+c.Errors) / window.Seconds()
}

// void says why the load generator, not the server, made a failing probe
// fail: its CPU was short (the cell's GeneratorBottleneck), or the server
// answered within the bound once each call was sent (the latency from the
// actual send met the objective, errors within the budget) and the calls
// were sent late because the generator woke late or had every worker
// busy. Otherwise a failure the server's own latency explains is the
// server's, whatever the generator did: on one machine an overloaded
// server also delays the generator.
func void(c *results.Cell, workers int, obj Objective) (bool, string) {
	attempts := c.Calls + c.Errors
	if attempts == 0 || c.DurationS <= 0 || c.StopReason != "" {
		return false, ""
	}
	if float64(c.Errors) > obj.MaxErrors*float64(attempts) {
		return false, ""
	}
	if c.GeneratorBottleneck {
		// Its CPU, not the server's, was short (loadgen.GeneratorShare,
		// MachineShare): on a shared machine the late reading of answers
		// is in the latency from the send too, so that one cannot clear
		// the server here.
		return true, c.GeneratorBottleneckReason
	}
	bound := float64(obj.Bound.Microseconds())
	if c.LatencyUncorrectedUS == nil || c.LatencyUncorrectedUS.At(obj.Percentile) > bound {
		return false, ""
	}
	late := max(VoidMinCalls, int64(VoidLate*float64(attempts)))
	queued := c.LateCalls - c.GeneratorLateCalls
	// Every worker busy the whole probe (Little's law: calls in flight =
	// achieved rate x latency from the send): the calls queued for a
	// worker, whatever the dispatcher's clock says (it is late too when it
	// waited for a worker to take the previous call).
	if inFlight := c.RateAchieved * c.LatencyUncorrectedUS.Mean / 1e6; c.LateCalls > late && inFlight >= 0.9*float64(workers) {
		return true, fmt.Sprintf("all %d workers were busy while the server met the objective: %d calls waited for one", workers, c.LateCalls)
	}
	if c.GeneratorLateCalls > late {
		return true, fmt.Sprintf("%d of %d calls started late with a worker free: the load generator woke late", c.GeneratorLateCalls, attempts)
	}
	if queued > late {
		return true, fmt.Sprintf("all %d workers were busy while the server met the objective: %d calls waited for one", workers, queued)
	}
	return false, ""
}

// stalled says why a probe's cell is no measurement of the server: the
// target stalled (calls still running at the cell's hard end, abandoned,
// or calls that timed out) or the load generator marked the cell suspect.
// A server that stopped for a few seconds (SIGSTOP, a pause of its host)
// gives such a cell, and its figures look like an overload: taken as a
// failure, the stall would set the capacity. A timeout (10 s by default)
// is far beyond any latency bound the search uses, so a call that reached
// it says stall, not queueing; far beyond the capacity with many workers
// (--concurrency fixed high), calls can take that long too, and the series
// then fails with this reason rather than report a rate.
func stalled(c *results.Cell, timeout time.Duration) (bool, string) {
	var why []string
	if n := c.ErrorClasses[results.ClassAbandoned]; n > 0 {
		why = append(why, fmt.Sprintf("%s still running at the probe's hard end (abandoned)", calls(n)))
	}
	if n := c.ErrorClasses[results.ClassTimeout]; n > 0 {
		s := calls(n) + " timed out"
		if timeout > 0 {
			s += " (--timeout " + timeout.String() + ")"
		}
		why = append(why, s)
	}
	if len(c.Suspect) > 0 {
		why = append(why, "the cell is suspect: "+strings.Join(c.Suspect, "; "))
	}
	return len(why) > 0, strings.Join(why, "; ")
}

func calls(n int64) string {
	if n == 1 {
		return "1 call"
	}
	return fmt.Sprintf("%d calls", n)
}

// Failed is an error naming every series whose search failed (the target
// stalled in every retry of a probe), on one line; nil when none did: a
// command exits non-zero on it, after writing the document.
func Failed(cs []results.Capacity) error {
	var msgs []string
	for i := range cs {
		if c := &cs[i]; c.Failure != "" {
			name := string(c.Scenario) + " " + c.Protocol.Title()
			if f := c.Condition.Features(); f != "" {
				name += " · " + f
			}
			msgs = append(msgs, name+": "+c.Failure)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New("capacity " + strings.Join(msgs, "; "))
}

// Capacity turns a series' searches (k asked for, in the order they ran)
// into the document's entry: with one, the search's result; with several,
// each search and the median, range and spans over them
// (results.Capacity).
func (p *Plan) Capacity(key results.CellKey, rs []Result, k int) results.Capacity {
	c := results.Capacity{
		Scenario:   key.Scenario,
		Protocol:   key.Protocol,
		Condition:  key.Condition,
		Objective:  p.Objective.String(),
		Percentile: p.Objective.Percentile,
		BoundUS:    float64(p.Objective.Bound.Microseconds()),
		MaxErrors:  p.Objective.MaxErrors,
	}
	c.Condition.Concurrency = p.Workers // 0: chosen per probe
	if k <= 1 && len(rs) == 1 {
		c.CapacitySearch = p.search(rs[0])
		return c
	}
	c.Probes = []results.CapacityProbe{}
	c.Complete = len(rs) == k
	var rates []float64
	var said []string
	c.Hi = -1
	for i, r := range rs {
		s := p.search(r)
		c.Searches = append(c.Searches, s)
		tag := fmt.Sprintf("search %d of %d", i+1, k)
		if s.Failure != "" && c.Failure == "" {
			c.Failure = "failed in " + tag + ": " + strings.TrimPrefix(s.Failure, "failed: ")
		}
		if s.Note != "" && s.Failure == "" {
			said = append(said, tag+": "+s.Note)
		}
		c.Complete = c.Complete && s.Complete
		c.Held += s.Held
		c.Boundary += s.Boundary
		c.GeneratorBound = max(c.GeneratorBound, s.GeneratorBound)
		rates = append(rates, s.Rate)
		if i == 0 || s.Lo < c.Lo {
			c.Lo = s.Lo
		}
		if s.Hi == 0 || c.Hi == 0 {
			c.Hi = 0 // open: one search had no failure
		} else {
			c.Hi = max(c.Hi, s.Hi)
		}
	}
	c.Hi = max(c.Hi, 0)
	if c.Failure != "" {
		c.GeneratorBound = 0
	} else if len(rates) > 0 {
		c.Rate = median(rates)
		c.RateMin, c.RateMax = slices.Min(rates), slices.Max(rates)
		if c.Rate > 0 {
			c.Workers = p.workers(c.Rate)
		}
	}
	c.Note = strings.Join(said, "; ")
	return c
}

// median of values (not empty): the middle one, or the mean of the two
// middle ones.
func median(values []float64) float64 {
	v := slices.Clone(values)
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// search is one search's result as the document keeps it.
func (p *Plan) search(r Result) results.CapacitySearch {
	c := results.CapacitySearch{
		Rate:           r.Rate,
		Lo:             r.Lo,
		Hi:             r.Hi,
		Held:           r.Held,
		Boundary:       r.Boundary,
		GeneratorBound: r.GeneratorBound,
		Complete:       r.Complete,
		Failure:        r.Failure,
		Note:           r.Note,
		Probes:         []results.CapacityProbe{},
	}
	if r.Rate > 0 {
		c.Workers = p.workers(r.Rate)
	}
	for _, pr := range r.Probes {
		c.Probes = append(c.Probes, results.CapacityProbe{
			Phase:     string(pr.Phase),
			Offered:   pr.Outcome.Offered,
			Achieved:  pr.Outcome.Achieved,
			LatencyUS: results.Latency{P50: pr.Outcome.P50},
			Calls:     pr.Outcome.Calls,
			Errors:    pr.Outcome.Errors,
			Verdict:   string(pr.Verdict),
			Why:       pr.Why,
			DurationS: pr.Outcome.Duration.Seconds(),
		})
		last := &c.Probes[len(c.Probes)-1]
		last.LatencyUS.SetAt(p.Objective.Percentile, pr.Outcome.Latency)
	}
	return c
}

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
