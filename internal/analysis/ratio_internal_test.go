package analysis

import (
	"testing"

	"github.com/meteorbench/meteorbench/internal/results"
)

// A ratio whose interval holds 1 is within noise even when the rank test
// passes: "1.28x [0.87, 1.43] slower" is not a difference.
func TestIntervalSpanningOneIsNoise(t *testing.T) {
	bs, os := []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10} // the rank test alone: significant
	for _, c := range []struct {
		lo, hi float64
		want   results.Significance
	}{{0.87, 1.43, results.NotSignificant}, {1.2, 3.0, results.Significant}} {
		r := results.Ratio{Ratio: 1.28, Lo: &c.lo, Hi: &c.hi}
		test(&r, bs, os)
		if r.Significance != c.want {
			t.Errorf("[%v, %v]: %v, want %v", c.lo, c.hi, r.Significance, c.want)
		}
	}
}
