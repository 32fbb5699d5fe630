package analysis

import (
	"fmt"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
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
			r := results.Ratio{Figure: FigCapacity, N: 1, Significance: results.Untested}
			// A generator-bound rate is a lower bound: no ratio.
			if base.Rate > 0 && c.Rate > 0 && base.GeneratorBound == 0 && c.GeneratorBound == 0 {
				r.Ratio = c.Rate / base.Rate
				r.Better = r.Ratio > 1
				v.Versus = append(v.Versus, results.Versus{Protocol: c.Protocol, Ratios: []results.Ratio{r}})
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

// capacityText is one protocol's capacity: "gRPC 7,300 calls/s [7,100, 7,600]".
func capacityText(c *results.Capacity) string {
	s := c.Protocol.Title() + " "
	switch {
	case c.Failure != "":
		return s + c.Failure
	case c.Rate == 0 && c.GeneratorBound > 0:
		return s + "generator-bound at " + results.FormatRate(c.GeneratorBound) + " calls/s before any rate passed"
	case c.Rate == 0:
		return s + "met the objective at no rate tried"
	case c.GeneratorBound > 0:
		return s + "at least " + results.FormatRate(c.Rate) + " calls/s (generator-bound at " + results.FormatRate(c.GeneratorBound) + ")"
	}
	s += results.FormatRate(c.Rate) + " calls/s"
	if c.Hi > 0 {
		s += " [" + results.FormatRate(c.Lo) + ", " + results.FormatRate(c.Hi) + "]"
	}
	if !c.Complete {
		s += " (search stopped early)"
	}
	return s
}

// headline says which protocol sustains more, by how much, when both
// capacities are known (a generator-bound one is only a lower bound).
func headline(base *results.Capacity, g []*results.Capacity) string {
	var parts []string
	for _, c := range g {
		if c == base || c.Rate == 0 || base.Rate == 0 {
			continue
		}
		hi, lo := c, base
		if base.Rate > c.Rate {
			hi, lo = base, c
		}
		if lo.GeneratorBound > 0 {
			continue // the lower one is a lower bound: no ratio
		}
		atLeast := ""
		if hi.GeneratorBound > 0 {
			atLeast = "at least " // the higher one is a lower bound
		}
		parts = append(parts, fmt.Sprintf("%s sustains %s%sx more than %s", hi.Protocol.Title(), atLeast, factor(hi.Rate/lo.Rate), lo.Protocol.Title()))
	}
	return strings.Join(parts, "; ")
}
