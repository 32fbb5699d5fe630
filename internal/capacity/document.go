package capacity

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/meteorbench/meteorbench/internal/results"
)

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
		Scenario:  key.Scenario,
		Protocol:  key.Protocol,
		Condition: key.Condition,
		CapacityObjective: results.CapacityObjective{
			Objective:  p.Objective.String(),
			Percentile: p.Objective.Percentile,
			BoundUS:    float64(p.Objective.Bound.Microseconds()),
			MaxErrors:  p.Objective.MaxErrors,
		},
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
		if s.Unstable != "" && c.Unstable == "" {
			c.Unstable = tag + ": " + s.Unstable
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
		Unstable:       r.Unstable,
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

// Document is the result document of a search that started at started
// and returned found and err (interrupted: ctx stopped it): the series
// found, the environment, the settings its probes shared (open loop, the
// probe's duration and warm-up) and why it stopped. It has no cells.
func (p *Plan) Document(found []results.Capacity, err error, interrupted bool, started time.Time) *results.Result {
	res := &results.Result{
		Schema:    results.Schema,
		Env:       p.Base.Env(),
		Settings:  p.settings(),
		Started:   started,
		Finished:  time.Now().UTC().Round(0),
		Cells:     []results.Cell{},
		Capacity:  found,
		NotServed: p.NotServed,
	}
	switch {
	case err == nil:
		res.Stop = results.Stop{Reason: results.StopCompleted}
	case interrupted:
		res.Stop, res.Interrupted = results.Stop{Reason: results.StopInterrupted}, true
	default:
		res.Stop = results.Failed(err)
	}
	return res
}

// settings records the search's plan: the run settings its probes share.
func (p *Plan) settings() results.Settings {
	cfg := p.Base
	cfg.Rate = p.Settings.Start
	cfg.Duration, cfg.Iterations, cfg.Warmup = p.Probe, 0, p.ProbeWarmup
	cfg.Batches = []int{1}
	s := cfg.Settings()
	s.Rate = 0
	if p.Workers == 0 {
		s.Concurrency = nil
	}
	return s
}
