package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/meteorbench/meteorbench/api"

	"github.com/meteorbench/meteorbench/internal/results"
)

// A group is the cells of one scenario x batch x condition: the protocols
// to put side by side, one section of the text formats.
type group struct {
	Scenario api.Scenario
	Batch    int
	results.Condition
	Cells []*results.Cell // in protocol display order
}

// title is the group's heading: "small (GetVersion) · batch 100 · concurrency 4".
func (g *group) title() string {
	return fmt.Sprintf("%s · batch %d · %s", g.Scenario.Title(), g.Batch, g.Condition.Label())
}

// chartTitle labels the group's latency panel: "small · batch 100 · c4 ·
// 100mbit/20ms", naming every feature of its condition that is set.
func (g *group) chartTitle() string {
	parts := []string{string(g.Scenario), fmt.Sprintf("batch %d", g.Batch)}
	for _, f := range g.Condition.Short() {
		if f.Set {
			parts = append(parts, f.Short)
		}
	}
	return strings.Join(parts, " · ")
}

// cell returns the group's cell for protocol p, or nil.
func (g *group) cell(p api.Protocol) *results.Cell {
	for _, c := range g.Cells {
		if c.Protocol == p {
			return c
		}
	}
	return nil
}

// protos lists the group's protocols, in column order.
func (g *group) protos() []string {
	out := make([]string, len(g.Cells))
	for i, c := range g.Cells {
		out[i] = string(c.Protocol)
	}
	return out
}

func rank[T comparable](known []T, s T) int {
	for i, k := range known {
		if k == s {
			return i
		}
	}
	return len(known)
}

func protoLess(a, b api.Protocol) bool {
	ra, rb := rank(api.Protocols(), a), rank(api.Protocols(), b)
	if ra != rb {
		return ra < rb
	}
	return a < b
}

// protocols returns the protocols present in cells, in display order.
func protocols(cells []*results.Cell) []api.Protocol {
	seen := map[api.Protocol]bool{}
	var out []api.Protocol
	for _, c := range cells {
		if p := c.Protocol; !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return protoLess(out[i], out[j]) })
	return out
}

// scenarioLess orders scenarios as the run's settings list them, then the
// known order, then by name.
func scenarioLess(order []api.Scenario) func(a, b api.Scenario) bool {
	return func(a, b api.Scenario) bool {
		ra, rb := rank(order, a), rank(order, b)
		if ra != rb {
			return ra < rb
		}
		ra, rb = rank(api.AllScenarios(), a), rank(api.AllScenarios(), b)
		if ra != rb {
			return ra < rb
		}
		return a < b
	}
}

// groupCells splits r's cells into groups, in display order: scenario,
// condition, batch.
func groupCells(r *results.Result) []*group {
	cells := make([]*results.Cell, len(r.Cells))
	for i := range r.Cells {
		cells[i] = &r.Cells[i]
	}
	return groupOf(cells, r.Settings.Scenarios)
}

// groupOf groups cells, scenarios ordered as order lists them first.
func groupOf(cells []*results.Cell, order []api.Scenario) []*group {
	type gkey struct {
		scenario api.Scenario
		batch    int
		cond     results.Condition
	}
	byKey := map[gkey]*group{}
	var out []*group
	for _, c := range cells {
		k := gkey{c.Scenario, c.Batch, c.Condition}
		g := byKey[k]
		if g == nil {
			g = &group{Scenario: c.Scenario, Batch: c.Batch, Condition: c.Condition}
			byKey[k] = g
			out = append(out, g)
		}
		g.Cells = append(g.Cells, c)
	}
	less := scenarioLess(order)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.Scenario != b.Scenario:
			return less(a.Scenario, b.Scenario)
		case a.Condition != b.Condition:
			return a.Condition.Less(b.Condition)
		default:
			return a.Batch < b.Batch
		}
	})
	for _, g := range out {
		sort.SliceStable(g.Cells, func(i, j int) bool { return protoLess(g.Cells[i].Protocol, g.Cells[j].Protocol) })
	}
	return out
}
