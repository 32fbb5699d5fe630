package stats

import (
	"math"
	"slices"
	"testing"
)

func TestSummarizeMedianInsideInterval(t *testing.T) {
	cases := []struct {
		name     string
		values   []float64
		median   float64
		wantConf float64 // minimum confidence expected
	}{
		{"three", []float64{30, 10, 20}, 20, 0.75},
		{"five", []float64{5, 1, 4, 2, 3}, 3, 0.9},
		{"ten", []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 5.5, 0.95},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := append([]float64(nil), c.values...)
			iv := Summarize(c.values)
			if iv.Median != c.median {
				t.Errorf("median = %v, want %v", iv.Median, c.median)
			}
			if !(iv.Lo <= iv.Median && iv.Median <= iv.Hi) {
				t.Errorf("interval [%v, %v] does not contain median %v", iv.Lo, iv.Hi, iv.Median)
			}
			if math.IsInf(iv.Lo, 0) || math.IsInf(iv.Hi, 0) {
				t.Errorf("infinite bound: %+v", iv)
			}
			if iv.Confidence < c.wantConf || iv.Confidence > 1 {
				t.Errorf("confidence = %v, want >= %v", iv.Confidence, c.wantConf)
			}
			if iv.N != len(c.values) {
				t.Errorf("N = %d, want %d", iv.N, len(c.values))
			}
			for i := range in {
				if in[i] != c.values[i] {
					t.Fatalf("input modified: %v -> %v", in, c.values)
				}
			}
		})
	}
}

func TestSummarizeDegenerate(t *testing.T) {
	if iv := Summarize(nil); iv.N != 0 || iv.Median != 0 {
		t.Errorf("empty: %+v", iv)
	}
	iv := Summarize([]float64{42})
	if iv.Median != 42 || iv.Lo != 42 || iv.Hi != 42 || iv.Confidence != 0 {
		t.Errorf("one value: %+v, want a point with confidence 0", iv)
	}
}

func TestCompare(t *testing.T) {
	a := []float64{10, 11, 10.5, 10.2, 10.8, 10.1}
	b := []float64{20, 21, 20.5, 20.2, 20.8, 20.1}
	if c := Compare(a, b); !c.Significant || c.P >= Alpha {
		t.Errorf("clearly different samples: %+v", c)
	}
	if c := Compare(a, a); c.Significant {
		t.Errorf("identical samples reported different: %+v", c)
	}
	// Three against three can never reach p < 0.05 with the U test.
	if c := Compare(a[:3], b[:3]); c.Significant || c.Note == "" {
		t.Errorf("3+3 samples: %+v, want not significant with a note", c)
	}
}

func TestRatiosPairsAndSkipsZero(t *testing.T) {
	got := Ratios([]float64{10, 20, 30, 40}, []float64{5, 0, 10})
	want := []float64{2, 3}
	if !slices.Equal(got, want) {
		t.Fatalf("Ratios = %v, want %v", got, want)
	}
}

// Equal samples give the U test's largest p-value, which benchmath sums
// to a hair over 1 for some sizes; Compare keeps it a probability.
func TestComparePIsAProbability(t *testing.T) {
	for n := 1; n <= 12; n++ {
		for m := 1; m <= 12; m++ {
			a, b := make([]float64, n), make([]float64, m)
			for i := range a {
				a[i] = float64(i % 3)
			}
			for i := range b {
				b[i] = float64(i % 3)
			}
			if c := Compare(a, b); c.P < 0 || c.P > 1 {
				t.Fatalf("n=%d m=%d: p %v outside [0, 1]", n, m, c.P)
			}
		}
	}
}
