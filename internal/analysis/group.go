package analysis

import (
	"slices"
	"sort"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
)

// verdictKey is what a verdict answers for.
type verdictKey struct {
	scenario  api.Scenario
	Condition results.Condition
}

// cellGroup is the cells of one verdict, by protocol, each protocol's cells
// in batch order.
type cellGroup struct {
	key     verdictKey
	protos  []api.Protocol // display order
	byProto map[api.Protocol][]*results.Cell
	// lentTo are the groups that borrowed this group's cells (borrow), in
	// display order once group has sorted them.
	lentTo []*cellGroup
}

func group(r *results.Result) []*cellGroup {
	byKey := map[verdictKey]*cellGroup{}
	var out []*cellGroup
	for i := range r.Cells {
		c := &r.Cells[i]
		k := verdictKey{c.Scenario, c.Condition}
		g := byKey[k]
		if g == nil {
			g = &cellGroup{key: k, byProto: map[api.Protocol][]*results.Cell{}}
			byKey[k] = g
			out = append(out, g)
		}
		if _, ok := g.byProto[c.Protocol]; !ok {
			g.protos = append(g.protos, c.Protocol)
		}
		g.byProto[c.Protocol] = append(g.byProto[c.Protocol], c)
	}
	borrow(out, byKey)
	scenOrder := append(slices.Clone(r.Settings.Scenarios), api.AllScenarios()...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].key, out[j].key
		if ra, rb := rank(scenOrder, a.scenario), rank(scenOrder, b.scenario); ra != rb {
			return ra < rb
		}
		return a.Condition.Less(b.Condition)
	})
	for _, g := range out {
		sort.SliceStable(g.lentTo, func(i, j int) bool { return g.lentTo[i].key.Condition.Less(g.lentTo[j].key.Condition) })
		sort.SliceStable(g.protos, func(i, j int) bool {
			return rank(api.Protocols(), g.protos[i]) < rank(api.Protocols(), g.protos[j])
		})
		for _, cs := range g.byProto {
			sort.SliceStable(cs, func(i, j int) bool { return cs[i].Batch < cs[j].Batch })
		}
	}
	return out
}

// borrow completes the groups of a condition that some protocols are not
// measured at (a dimension with results.Dimension.Protocols set, such as
// the JSON codec): such a protocol's cells come from the group of the same
// condition with those dimensions at their default, so "JSON by sonic"
// compares rest with sonic against grpc as it was measured.
func borrow(groups []*cellGroup, byKey map[verdictKey]*cellGroup) {
	var all []api.Protocol
	for _, g := range groups {
		for _, p := range g.protos {
			if !slices.Contains(all, p) {
				all = append(all, p)
			}
		}
	}
	for _, g := range groups {
		for _, p := range all {
			if _, ok := g.byProto[p]; ok {
				continue
			}
			base := g.key.Condition
			for _, d := range results.Dimensions {
				if len(d.Protocols) > 0 && !slices.Contains(d.Protocols, p) && d.IsSet(base) {
					d.Clear(&base)
				}
			}
			if base == g.key.Condition {
				continue
			}
			if from := byKey[verdictKey{g.key.scenario, base}]; from != nil && len(from.byProto[p]) > 0 {
				g.byProto[p] = from.byProto[p]
				g.protos = append(g.protos, p)
				if !slices.Contains(from.lentTo, g) {
					from.lentTo = append(from.lentTo, g)
				}
			}
		}
	}
}

func rank[T comparable](order []T, v T) int {
	if i := slices.Index(order, v); i >= 0 {
		return i
	}
	return len(order)
}
