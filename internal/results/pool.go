package results

import (
	"errors"
	"fmt"
	"math"
)

// Welford is a running count, mean and sum of squared deviations (Welford),
// merged as Chan et al. do: what the load generator keeps of the time per
// batch, and what merge pools across the parts of a split run.
type Welford struct {
	N        int64
	Mean, M2 float64
}

// WelfordOf is the Welford of n values whose mean and sample standard
// deviation are s.
func WelfordOf(n int64, s Spread) Welford {
	return Welford{N: n, Mean: s.Mean, M2: s.Stddev * s.Stddev * float64(max(n-1, 0))}
}

// Add takes in one value.
func (w *Welford) Add(x float64) {
	w.N++
	d := x - w.Mean
	w.Mean += d / float64(w.N)
	w.M2 += d * (x - w.Mean)
}

// Merge takes in the values o has, as if each had been added.
func (w *Welford) Merge(o Welford) {
	if o.N == 0 {
		return
	}
	if w.N == 0 {
		*w = o
		return
	}
	n := w.N + o.N
	d := o.Mean - w.Mean
	w.Mean += d * float64(o.N) / float64(n)
	w.M2 += o.M2 + d*d*float64(w.N)*float64(o.N)/float64(n)
	w.N = n
}

// Stddev is the sample standard deviation (0 for fewer than 2 values).
func (w Welford) Stddev() float64 {
	if w.N < 2 {
		return 0
	}
	return math.Sqrt(w.M2 / float64(w.N-1))
}

// AddClasses adds the counts of from to *to (made when first needed): the
// error classes of two tallies or cells, pooled.
func AddClasses(to *ErrorCounts, from ErrorCounts) {
	for k, v := range from {
		if *to == nil {
			*to = ErrorCounts{}
		}
		(*to)[k] += v
	}
}

// AddExamples gives *to (made when first needed) from's example of each
// class it has none of: the first example of a class stays.
func AddExamples(to *map[ErrorClass]string, from map[ErrorClass]string) {
	for k, v := range from {
		if _, ok := (*to)[k]; !ok {
			if *to == nil {
				*to = map[ErrorClass]string{}
			}
			(*to)[k] = v
		}
	}
}

// AddCounts adds what c counted to m, as pooling cells (the repeats of a
// cell, the parts of a split run) does: its calls, errors, batches, late
// calls, error classes and examples; the first stop reason stays.
func (m *Cell) AddCounts(c *Cell) {
	m.Calls += c.Calls
	m.Errors += c.Errors
	m.Batches += c.Batches
	m.LateCalls += c.LateCalls
	m.GeneratorLateCalls += c.GeneratorLateCalls
	AddClasses(&m.ErrorClasses, c.ErrorClasses)
	AddExamples(&m.ErrorExamples, c.ErrorExamples)
	if m.StopReason == "" {
		m.StopReason = c.StopReason
	}
}

// ErrOverflow is wrapped when a sum of counts would not fit in an int64.
var ErrOverflow = errors.New("the sum does not fit in an int64")

// AddInt64 is a + b, or ErrOverflow when it does not fit.
func AddInt64(a, b int64) (int64, error) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, fmt.Errorf("%d + %d: %w", a, b, ErrOverflow)
	}
	return s, nil
}

// AddCountsChecked is AddCounts for counts from outside (documents to
// merge): it adds nothing and names the count when a sum would overflow.
func (m *Cell) AddCountsChecked(c *Cell) error {
	for _, f := range []struct {
		name string
		a, b int64
	}{
		{"calls", m.Calls, c.Calls}, {"errors", m.Errors, c.Errors}, {"batches", m.Batches, c.Batches},
		{"late_calls", m.LateCalls, c.LateCalls}, {"generator_late_calls", m.GeneratorLateCalls, c.GeneratorLateCalls},
	} {
		if _, err := AddInt64(f.a, f.b); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	for k, v := range c.ErrorClasses {
		if _, err := AddInt64(m.ErrorClasses[k], v); err != nil {
			return fmt.Errorf("error_classes.%s: %w", k, err)
		}
	}
	m.AddCounts(c)
	return nil
}
