package report

import (
	"fmt"

	"github.com/meteorbench/meteorbench/internal/cpubreakdown"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// breakdownMin is the least share a category needs, in one of a section's
// cells, to get a row of its own.
const breakdownMin = 0.02

// breakdownRows are the rows of where each side's CPU went (run
// --profile): per category, each protocol's share and CPU per call
// ("61% 2.1 ms"), the profile's samples, or why it is unknown.
func breakdownRows(g *group) []rowDef {
	var defs []rowDef
	for _, side := range []struct {
		name string
		get  func(c *results.Cell) *results.CPUBreakdown
	}{
		{"server", func(c *results.Cell) *results.CPUBreakdown { return c.ServerCPUBreakdown }},
		{"client", func(c *results.Cell) *results.CPUBreakdown { return c.ClientCPUBreakdown }},
	} {
		get := side.get
		present := map[cpubreakdown.Category]bool{}
		any := false
		for _, c := range g.Cells {
			b := get(c)
			if b == nil {
				continue
			}
			any = true
			if b.Known() {
				for _, cat := range cpubreakdown.Ordered(b, breakdownMin) {
					present[cat] = true
				}
			}
		}
		if !any {
			continue
		}
		defs = append(defs, rowDef{side.name + " CPU profile", func(c *results.Cell) string {
			switch b := get(c); {
			case b == nil:
				return ""
			case !b.Known():
				return "unknown (see JSON)"
			default:
				out := format.Count(b.Samples) + " samples, " + format.US(b.ProfiledUSPerCall) + "/call"
				if b.Coverage != nil {
					out += ", covers " + format.Percent(*b.Coverage)
				}
				return out
			}
		}})
		for _, cat := range cpubreakdown.Categories {
			if !present[cat] {
				continue
			}
			defs = append(defs, rowDef{"  " + side.name + " " + cat.Label(), func(c *results.Cell) string {
				b := get(c)
				if !b.Known() {
					return ""
				}
				s, ok := b.Categories[string(cat)]
				if !ok {
					return "0%"
				}
				return format.Percent(s.Share) + " " + format.US(s.USPerCall)
			}})
		}
	}
	return defs
}

// profilingCostNote says what --profile cost the run, as measured in it.
func profilingCostNote(pc *results.ProfilingCost) string {
	if pc.ServerCPUPerCall == nil && pc.ClientCPUPerCall == nil && pc.P50 == nil {
		return "profiling cost: " + pc.Note
	}
	signed := func(v *float64) string {
		if v == nil {
			return "unknown"
		}
		if *v >= 0 {
			return "+" + format.Percent(*v)
		}
		return "-" + format.Percent(-*v)
	}
	return fmt.Sprintf("profiling cost (--profile; profiled windows against the others, interleaved, median of %d cells): server CPU/call %s, client CPU/call %s, p50 %s", pc.Cells, signed(pc.ServerCPUPerCall), signed(pc.ClientCPUPerCall), signed(pc.P50))
}
