package analysis

import (
	"fmt"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/stats"
)

// FigCapacity is the figure of a capacity verdict's ratio: the highest
// rate that met the objective.
const FigCapacity results.Figure = "capacity_calls_per_s"

// CapacityVerdicts compares the protocols' capacities per scenario and
// condition: "small · server on 1 CPU · p99<=50ms: REST 9,800 calls/s
// [9,500, 10,100], gRPC 7,300 [7,100, 7,600] → REST sustains 1.34x more".
func CapacityVerdicts(cs []results.Capacity) []results.Verdict {
	type key struct {
		s api.Scenario
		c results.Condition
	}
	var order []key
	groups := map[key][]*results.Capacity{}
	for i := range cs {
		k := key{cs[i].Scenario, cs[i].Condition}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], &cs[i])
	}
	var out []results.Verdict
	for _, k := range order {
		g := groups[k]
		v := results.Verdict{Scenario: k.s, Condition: k.c, Batches: []int{}, Versus: []results.Versus{}}
		base := g[0]
		for _, c := range g {
			if c.Protocol == api.REST {
				base = c
			}
		}
		v.Baseline = base.Protocol
		var parts []string
		for _, c := range g {
			parts = append(parts, capacityText(c))
			if c.Note != "" && c.Note != c.Failure { // a failure is in the line
				v.Notes = append(v.Notes, c.Protocol.Title()+": "+c.Note)
			}
		}
		prefix := string(k.s)
		if f := k.c.Features(); f != "" {
			prefix += " · " + f
		}
		s := prefix + ", " + base.Objective + ": " + strings.Join(parts, ", ")
		// The headline: the protocol that sustains more, against the other.
		for _, c := range g {
			if c == base {
				continue
			}
			// A lower bound (generator-bound, or no rate failed): no ratio.
			if found(base) && found(c) && !base.LowerBound() && !c.LowerBound() {
				v.Versus = append(v.Versus, results.Versus{Protocol: c.Protocol, Ratios: []results.Ratio{capacityRatio(base, c)}})
			}
		}
		if head := headline(base, g); head != "" {
			s += " → " + head
		}
		v.Summary = s
		out = append(out, v)
	}
	return out
}

// capacityRatio is c's capacity over base's: the ratio of the medians,
// with the spread of the per-search ratios (searches run interleaved, so
// search i of one protocol pairs with search i of the other) and, with
// enough searches, the test.
func capacityRatio(base, c *results.Capacity) results.Ratio {
	r := results.Ratio{Figure: FigCapacity, Ratio: c.Rate / base.Rate, N: 1, Significance: results.Untested}
	r.Better = r.Ratio > 1
	if len(base.Searches) < 2 || len(c.Searches) < 2 {
		return r
	}
	var bs, cs []float64
	for i := range min(len(base.Searches), len(c.Searches)) {
		if b, o := base.Searches[i].Rate, c.Searches[i].Rate; b > 0 && o > 0 {
			bs, cs = append(bs, b), append(cs, o)
		}
	}
	r.N = len(bs)
	if r.N > 1 {
		iv := stats.Summarize(stats.Ratios(cs, bs))
		lo, hi := iv.Lo, iv.Hi
		r.Lo, r.Hi = &lo, &hi
	}
	if r.N >= 2 {
		test(&r, bs, cs)
	}
	return r
}

// capacityText is one protocol's capacity: "gRPC 7,300 calls/s [7,100,
// 7,600]"; with several searches, the median and the range of the found
// rates: "gRPC 7,300 calls/s, median of 3 searches [7,100, 7,600]".
func capacityText(c *results.Capacity) string {
	s := c.Protocol.Title() + " "
	switch {
	case c.Failure != "":
		return s + c.Failure
	case c.Rate == 0 && c.GeneratorBound > 0:
		return s + "generator-bound at " + format.Rate(c.GeneratorBound) + " calls/s before any rate passed"
	case c.Rate == 0:
		return s + "met the objective at no rate tried"
	case c.GeneratorBound > 0 && len(c.Searches) > 1:
		return s + "at least " + format.Rate(c.Rate) + " calls/s, " + searchRange(c) + " (generator-bound at up to " + format.Rate(c.GeneratorBound) + ")"
	case c.GeneratorBound > 0:
		return s + "at least " + format.Rate(c.Rate) + " calls/s (generator-bound at " + format.Rate(c.GeneratorBound) + ")"
	case c.LowerBound():
		s += "at least " + format.Rate(c.Rate) + " calls/s"
		if len(c.Searches) > 1 {
			s += ", " + searchRange(c)
		}
		s += " (no rate failed"
		if !c.Complete {
			s += "; search stopped early"
		}
		return s + ")"
	}
	s += format.Rate(c.Rate) + " calls/s"
	if len(c.Searches) > 1 {
		s += ", " + searchRange(c)
	} else if c.Hi > 0 {
		s += " [" + format.Rate(c.Lo) + ", " + format.Rate(c.Hi) + "]"
	}
	if !c.Complete {
		s += " (search stopped early)"
	}
	if c.Unstable != "" {
		s += " (unstable: " + c.Unstable + ")"
	}
	return s
}

// searchRange is "median of 3 searches [7,100, 7,600]": the found rates'
// range.
func searchRange(c *results.Capacity) string {
	return fmt.Sprintf("median of %d searches [%s, %s]", len(c.Searches), format.Rate(c.RateMin), format.Rate(c.RateMax))
}

// rangesOverlap says whether two repeated series' found rates overlap.
func rangesOverlap(a, b *results.Capacity) bool {
	return a.RateMin <= b.RateMax && b.RateMin <= a.RateMax
}

// found says whether a series found a rate to compare: one passed, and
// the search neither failed nor contradicted itself (unstable).
func found(c *results.Capacity) bool {
	return c.Rate > 0 && c.Failure == "" && c.Unstable == ""
}

// headline says which protocol sustains more, by how much, when both
// capacities are known (a generator-bound one, or one where no rate
// failed, is only a lower bound).
func headline(base *results.Capacity, g []*results.Capacity) string {
	var parts []string
	for _, c := range g {
		if c == base || !found(c) || !found(base) {
			continue
		}
		hi, lo := c, base
		if base.Rate > c.Rate {
			hi, lo = base, c
		}
		if lo.LowerBound() {
			continue // the lower one is a lower bound: no ratio
		}
		atLeast := ""
		if hi.LowerBound() {
			atLeast = "at least " // the higher one is a lower bound
		}
		part := fmt.Sprintf("%s sustains %s%sx more than %s", hi.Protocol.Title(), atLeast, format.Factor(hi.Rate/lo.Rate), lo.Protocol.Title())
		if len(hi.Searches) > 1 && len(lo.Searches) > 1 {
			// Repeated: the medians compared; overlapping ranges do not
			// show a difference the searches agree on.
			part += " (medians"
			if rangesOverlap(hi, lo) {
				part += "; the ranges overlap"
			}
			part += ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}
