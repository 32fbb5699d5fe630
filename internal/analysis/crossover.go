package analysis

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// crossoverFigures are the figures a crossover is sought on, in order.
var crossoverFigures = []results.Figure{results.FigLatencyP50, results.FigCallsPerS}

// Crossovers finds, for each scenario and condition measured at several
// payload sizes (verdicts that differ only by Condition.Records), each
// protocol's smallest size from which on it beats the baseline: better
// (Ratio.Better) at that size and at every larger size measured. A size
// whose verdict lacks the ratio (a saturated open-loop cell, no successful
// call) is left out of Sizes; a verdict with another baseline than the
// group's first is left out. At least two sizes make a crossover.
func Crossovers(vs []results.Verdict) []results.Crossover {
	type groupKey struct {
		scenario api.Scenario
		cond     results.Condition
	}
	byKey := map[groupKey][]*results.Verdict{}
	var keys []groupKey
	for i := range vs {
		v := &vs[i]
		if v.Condition.Records == 0 {
			continue // not part of a payload sweep
		}
		k := groupKey{v.Scenario, v.Condition}
		k.cond.Records = 0
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], v)
	}
	conditions := map[results.Condition]bool{}
	for _, k := range keys {
		conditions[k.cond] = true
	}
	var out []results.Crossover
	for _, k := range keys {
		g := byKey[k]
		sort.SliceStable(g, func(i, j int) bool { return g[i].Condition.Records < g[j].Condition.Records })
		base := g[0].Baseline
		var protos []api.Protocol
		for _, v := range g {
			for _, x := range v.Versus {
				if v.Baseline == base && !slices.Contains(protos, x.Protocol) {
					protos = append(protos, x.Protocol)
				}
			}
		}
		sort.SliceStable(protos, func(i, j int) bool {
			return rank(api.Protocols(), protos[i]) < rank(api.Protocols(), protos[j])
		})
		prefix := string(k.scenario)
		if len(conditions) > 1 || k.cond.RateRequested > 0 {
			prefix += " · " + k.cond.Label()
		}
		for _, p := range protos {
			for _, f := range crossoverFigures {
				var sizes []int
				var wins []bool
				for _, v := range g {
					if v.Baseline != base {
						continue
					}
					if r, ok := ratioFor(v, p, f); ok {
						sizes = append(sizes, v.Condition.Records)
						wins = append(wins, r.Better)
					}
				}
				if len(sizes) < 2 {
					continue
				}
				x := results.Crossover{Scenario: k.scenario, Condition: k.cond, Protocol: p, Figure: f, Sizes: sizes}
				from := len(sizes) // index of the crossover; len: none
				for from > 0 && wins[from-1] {
					from--
				}
				if from < len(sizes) {
					x.Records = sizes[from]
				}
				x.Text = prefix + ": " + p.Title() + " " + crossoverPhrase(f, sizes, wins, from) + " (measured " + sizeList(sizes) + ")"
				out = append(out, x)
			}
		}
	}
	return out
}

// ratioFor is protocol p's ratio of figure f in a verdict.
func ratioFor(v *results.Verdict, p api.Protocol, f results.Figure) (results.Ratio, bool) {
	for _, x := range v.Versus {
		if x.Protocol != p {
			continue
		}
		for _, r := range x.Ratios {
			if r.Figure == f {
				return r, true
			}
		}
	}
	return results.Ratio{}, false
}

// crossoverPhrase says where a protocol wins on a figure, without the
// protocol and the sizes: "faster (p50) from 100 records", "more calls/s at
// every size", "never faster (p50)", "faster (p50) from 1,000 records, also
// at 10", "faster (p50) only at 10".
func crossoverPhrase(f results.Figure, sizes []int, wins []bool, from int) string {
	w := words[f]
	better := w[0] + w[2]
	var below []string // wins before the crossover
	for i := range from {
		if wins[i] {
			below = append(below, strconv.Itoa(sizes[i]))
		}
	}
	switch {
	case from == 0:
		return better + " at every size"
	case from == len(sizes) && len(below) == 0:
		return "never " + better
	case from == len(sizes):
		return better + " only at " + strings.Join(below, ", ")
	}
	s := better + " from " + format.Records(sizes[from])
	if len(below) > 0 {
		s += ", also at " + strings.Join(below, ", ")
	}
	return s
}

func sizeList(sizes []int) string {
	parts := make([]string, len(sizes))
	for i, n := range sizes {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ", ")
}

// CrossoverLines are the crossovers as the summary prints them: one line
// per scenario, condition and protocol, its figures joined when they were
// measured at the same sizes ("large: gRPC faster (p50) from 100 records,
// more calls/s from 100 records (measured 1, 10, 100, 1000, 10000)"), else
// each crossover's own Text.
func CrossoverLines(cs []results.Crossover) []string {
	var out []string
	for i := 0; i < len(cs); {
		j := i + 1
		for j < len(cs) && cs[j].Scenario == cs[i].Scenario && cs[j].Condition == cs[i].Condition &&
			cs[j].Protocol == cs[i].Protocol && slices.Equal(cs[j].Sizes, cs[i].Sizes) {
			j++
		}
		if j == i+1 {
			out = append(out, cs[i].Text)
			i = j
			continue
		}
		// Every Text of the run is "<prefix>: <Protocol> <phrase> (measured ...)".
		head, _, _ := strings.Cut(cs[i].Text, ": "+cs[i].Protocol.Title()+" ")
		phrases := make([]string, 0, j-i)
		for _, x := range cs[i:j] {
			phrases = append(phrases, crossoverPhraseOf(x))
		}
		out = append(out, head+": "+cs[i].Protocol.Title()+" "+strings.Join(phrases, ", ")+" (measured "+sizeList(cs[i].Sizes)+")")
		i = j
	}
	return out
}

// crossoverPhraseOf is a crossover's phrase, cut out of its Text.
func crossoverPhraseOf(x results.Crossover) string {
	s := x.Text
	if i := strings.Index(s, ": "+x.Protocol.Title()+" "); i >= 0 {
		s = s[i+len(": "+x.Protocol.Title()+" "):]
	}
	return strings.TrimSuffix(s, " (measured "+sizeList(x.Sizes)+")")
}
