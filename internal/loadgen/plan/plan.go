package plan

import (
	"fmt"

	"github.com/meteorbench/meteorbench/api"

	"github.com/meteorbench/meteorbench/internal/results"
)

// Spec is one measurement: a cell of the plan and which repeat it is.
type Spec struct {
	results.CellKey
	Repeat int // 0-based
}

func (s Spec) String() string {
	s2 := fmt.Sprintf("%s %s · batch %d · %s", s.Scenario, s.Protocol, s.Batch, s.Condition.Label())
	if s.Repeat > 0 {
		s2 += fmt.Sprintf(" · repeat %d", s.Repeat+1)
	}
	return s2
}

// plan expands a config into the order cells are measured in: for each
// scenario and batch, every combination of the conditions' values in
// planTable order (rate, server CPUs, link, concurrency, payload size,
// compression, TLS, JSON codec, endpoint, payload, traffic, engine, then
// those declared in results.Dimensions alone: the last changing fastest),
// and for each combination every repeat, and in each repeat every
// protocol (the innermost loop: rest, grpc, rest, grpc, ...). Slow drift
// of the machine then hits all protocols of a cell alike.
func (c Config) Specs() []Spec {
	var out []Spec
	for _, sc := range c.Scenarios {
		table := planTable()
		values := make([][]func(*results.Condition), len(table))
		for i, d := range table {
			values[i] = d.values(c, sc)
		}
		for _, b := range c.Batches {
			combinations(values, func(cond results.Condition, at []int) {
				for r := range c.Repeat {
					for _, p := range c.Protocols {
						if pc, ok := forProtocol(table, values, cond, at, p); ok {
							out = append(out, Spec{CellKey: results.CellKey{
								Scenario: sc, Protocol: p, Batch: b, Condition: pc,
							}, Repeat: r})
						}
					}
				}
			})
		}
	}
	return out
}

// forProtocol is cond as protocol p is measured under it: every dimension
// that does not apply to p at cond's value (results.Dimension.For: one
// whose Protocols leave p out, and whose Also does not list that value for
// it) at its default, and p measured there only at the first of that
// dimension's values that does not apply to it (at is the combination's
// index of each dimension's value in table, values their setters), so
// once per other condition; ok is false at the others.
func forProtocol(table []planDimension, values [][]func(*results.Condition), cond results.Condition, at []int, p api.Protocol) (_ results.Condition, ok bool) {
	for i, d := range table {
		rd, found := results.DimensionByField(d.field)
		if !found || rd.For(p, cond) {
			continue
		}
		if at[i] != firstNotFor(rd, values[i], p) {
			return cond, false
		}
		rd.Clear(&cond)
	}
	return cond, true
}

// firstNotFor is the index of the first of a dimension's values (their
// setters) that does not apply to p.
func firstNotFor(rd results.Dimension, values []func(*results.Condition), p api.Protocol) int {
	for j, set := range values {
		var k results.Condition
		set(&k)
		if !rd.For(p, k) {
			return j
		}
	}
	return 0
}

// combinations calls f with every combination of one value of each
// dimension and the index of each value, the last dimension changing
// fastest (an odometer, as grpc-go benchmark's generateFeatures). A
// dimension with no values gives none.
func combinations(values [][]func(*results.Condition), f func(cond results.Condition, at []int)) {
	for _, vs := range values {
		if len(vs) == 0 {
			return
		}
	}
	at := make([]int, len(values))
	for {
		var cond results.Condition
		for i, vs := range values {
			vs[at[i]](&cond)
		}
		f(cond, at)
		i := len(at) - 1
		for ; i >= 0; i-- {
			if at[i]++; at[i] < len(values[i]) {
				break
			}
			at[i] = 0
		}
		if i < 0 {
			return
		}
	}
}

// Cells lists the cells of c's plan once each (repeats not repeated), in
// the order they are measured.
func (c Config) Cells() []results.CellKey {
	var out []results.CellKey
	for _, s := range c.WithDefaults().Specs() {
		if s.Repeat == 0 {
			out = append(out, s.CellKey)
		}
	}
	return out
}
