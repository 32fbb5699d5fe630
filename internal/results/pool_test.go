package results

import (
	"math"
	"testing"
)

func TestWelford(t *testing.T) {
	var w Welford
	for _, x := range []float64{2, 4, 4, 4, 5, 5, 7, 9} {
		w.Add(x)
	}
	// Mean 5; sample variance 32/7.
	if w.Mean != 5 || math.Abs(w.Stddev()-math.Sqrt(32.0/7)) > 1e-12 {
		t.Errorf("mean %v, stddev %v", w.Mean, w.Stddev())
	}
	var one Welford
	one.Add(3)
	if one.Stddev() != 0 {
		t.Errorf("one value: stddev %v", one.Stddev())
	}
}
