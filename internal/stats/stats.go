// Package stats turns repeated measurements into medians with confidence
// intervals and tells whether two sets of measurements differ, using
// golang.org/x/perf/benchmath: the same distribution-free statistics
// benchstat uses (order-statistic intervals, Mann-Whitney U test).
package stats

import (
	"math"

	"golang.org/x/perf/benchmath"

	"github.com/meteorbench/meteorbench/internal/results"
)

// Confidence is the level intervals aim for. With fewer than 6 values no
// distribution-free interval of the median reaches 95%; Summarize then gives
// the widest finite one (min..max) and says its real, lower level.
const Confidence = 0.95

// Alpha is the significance level of Compare.
const Alpha = 0.05

// Summarize returns the median of values and its confidence interval. The
// input is not modified. An empty input gives a zero Interval.
func Summarize(values []float64) results.Interval {
	n := len(values)
	if n == 0 {
		return results.Interval{}
	}
	conf := Confidence
	// The interval [min, max] of n values covers the median with
	// probability 1 - 2*(1/2)^n; ask for no more than that, so the bounds
	// stay finite.
	if max := 1 - math.Pow(0.5, float64(n-1)); max < conf {
		conf = max
	}
	s := benchmath.NewSample(append([]float64(nil), values...), &benchmath.DefaultThresholds)
	sum := benchmath.AssumeNothing.Summary(s, conf)
	iv := results.Interval{Median: sum.Center, Lo: sum.Lo, Hi: sum.Hi, Confidence: sum.Confidence, N: n}
	if n == 1 || math.IsInf(iv.Lo, 0) || math.IsInf(iv.Hi, 0) {
		// One value has no interval; never let an infinity reach JSON.
		iv.Lo, iv.Hi, iv.Confidence = sum.Center, sum.Center, 0
	}
	return iv
}

// Comparison says whether two sets of measurements differ.
type Comparison struct {
	P           float64 // p-value of "same distribution" (Mann-Whitney U)
	Significant bool    // P < Alpha and enough values to tell
	// Note explains a non-significant result that more repeats could change,
	// e.g. "need >= 4 samples to detect a difference at alpha level 0.05".
	Note string
}

// Compare tests whether a and b come from the same distribution.
func Compare(a, b []float64) Comparison {
	if len(a) == 0 || len(b) == 0 {
		return Comparison{P: 1, Note: "no values"}
	}
	sa := benchmath.NewSample(append([]float64(nil), a...), &benchmath.DefaultThresholds)
	sb := benchmath.NewSample(append([]float64(nil), b...), &benchmath.DefaultThresholds)
	c := benchmath.AssumeNothing.Compare(sa, sb)
	// benchmath's exact U distribution can sum to 1.0000000000000002: a
	// p-value is a probability, and documents are validated as such.
	p := min(max(c.P, 0), 1)
	out := Comparison{P: p, Significant: p < c.Alpha}
	if len(c.Warnings) > 0 {
		out.Note = c.Warnings[0].Error()
	}
	return out
}

// Ratios returns num[i]/den[i] for each pair: repeats are interleaved, so
// repeat i of one protocol ran next to repeat i of the other and their ratio
// cancels drift that hits both. Pairs with a zero denominator are skipped.
func Ratios(num, den []float64) []float64 {
	n := min(len(num), len(den))
	out := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		if den[i] != 0 {
			out = append(out, num[i]/den[i])
		}
	}
	return out
}
