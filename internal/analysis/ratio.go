package analysis

import (
	"fmt"
	"math"
	"strings"

	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/stats"
)

// SaturatedBelow is the fraction of the requested open-loop rate under
// which a cell is saturated: its latency is mostly queueing in front of a
// server (or a load generator) that could not keep up, so no latency
// verdict is drawn from it.
const SaturatedBelow = 0.9

// MinTestSamples is the fewest samples a side needs before the
// Mann-Whitney U test can reject "no difference" at α = 0.05 (with 3 a side
// the smallest possible p-value is 0.1).
const MinTestSamples = 4

// compared are the figures each Versus holds, in order. The first four
// make the summary line.
var compared = []results.Figure{
	results.FigLatencyP50,
	results.FigCallsPerS,
	results.FigBytesTotal,
	results.FigServerCPU,
	results.FigLatencyP99,
	results.FigClientCPU,
}

// saturated reports whether an open-loop cell fell short of its rate.
func saturated(c *results.Cell) bool {
	return c.RateRequested > 0 && c.RateAchieved < SaturatedBelow*c.RateRequested
}

// versus compares one protocol's cells with the baseline's, figure by
// figure, pooling batches.
func versus(base, other []*results.Cell) results.Versus {
	vs := results.Versus{Ratios: []results.Ratio{}}
	open := base[0].RateRequested > 0
	var sat []string
	for _, side := range [][]*results.Cell{base, other} {
		for _, c := range side {
			if saturated(c) {
				sat = append(sat, fmt.Sprintf("%s reached %s of %s calls/s", c.Protocol.Title(),
					format.Rate(c.RateAchieved), format.Rate(c.RateRequested)))
				break
			}
		}
	}
	if len(sat) > 0 {
		vs.Saturated = "saturated: " + strings.Join(sat, ", ")
	}
	for _, f := range compared {
		isLatency := f == results.FigLatencyP50 || f == results.FigLatencyP99
		switch {
		case isLatency && vs.Saturated != "":
			continue // queueing, not the protocol
		case f == results.FigCallsPerS && open && vs.Saturated == "":
			continue // both kept the requested rate: the ratio is 1 by design
		}
		if r, ok := ratio(base, other, f); ok {
			vs.Ratios = append(vs.Ratios, r)
		}
	}
	return vs
}

// ratio pools one figure's paired samples over the batches both sides
// measured: per repeat where both sides were repeated (repeat i of one
// protocol ran next to repeat i of the other, so their ratio cancels drift),
// else per cell.
func ratio(base, other []*results.Cell, f results.Figure) (results.Ratio, bool) {
	var bs, os []float64 // paired samples
	repeated := false
	for _, bc := range base {
		var oc *results.Cell
		for _, c := range other {
			if c.Batch == bc.Batch {
				oc = c
			}
		}
		if oc == nil {
			continue
		}
		if len(bc.Repeats) > 1 && len(oc.Repeats) > 1 {
			repeated = true
			for i := range min(len(bc.Repeats), len(oc.Repeats)) {
				b, ok1 := bc.Repeats[i][f]
				o, ok2 := oc.Repeats[i][f]
				if ok1 && ok2 && b > 0 && o > 0 {
					bs, os = append(bs, b), append(os, o)
				}
			}
			continue
		}
		b, ok1 := bc.Figure(f)
		o, ok2 := oc.Figure(f)
		if ok1 && ok2 && b > 0 && o > 0 {
			bs, os = append(bs, b), append(os, o)
		}
	}
	if len(bs) == 0 {
		return results.Ratio{}, false
	}
	info, _ := f.Info()
	iv := stats.Summarize(stats.Ratios(os, bs))
	r := results.Ratio{Figure: f, Ratio: iv.Median, N: iv.N}
	r.Better = (r.Ratio > 1) == info.HigherIsBetter && r.Ratio != 1
	if iv.N > 1 {
		lo, hi := iv.Lo, iv.Hi
		r.Lo, r.Hi = &lo, &hi
	}
	if repeated {
		test(&r, bs, os)
	} else {
		r.Significance = results.Untested
	}
	return r, true
}

// test sets r's significance from paired samples of the baseline (bs) and
// the other side (os): too few to test under MinTestSamples, else the
// Mann-Whitney U test's verdict and p-value.
func test(r *results.Ratio, bs, os []float64) {
	if len(bs) < MinTestSamples {
		r.Significance = results.TooFew
		return
	}
	cmp := stats.Compare(bs, os)
	p := cmp.P
	r.P = &p
	r.Significance = results.NotSignificant
	if cmp.Significant && !spansOne(*r) {
		r.Significance = results.Significant
	}
}

// spansOne reports whether r's interval holds 1: no difference is then
// among the ratios the repeats gave, whatever the rank test says (which
// can pass on a few repeats the pairing does not bear out: "1.28x [0.87,
// 1.43] slower" was printed as a difference), so it is within noise.
func spansOne(r results.Ratio) bool {
	return r.Lo != nil && r.Hi != nil && *r.Lo <= 1 && *r.Hi >= 1
}

// median is the median of a figure over the cells that have it.
func median(cs []*results.Cell, f results.Figure) float64 {
	var vs []float64
	for _, c := range cs {
		if v, ok := c.Figure(f); ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return math.NaN()
	}
	return stats.Summarize(vs).Median
}
