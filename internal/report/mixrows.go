package report

import (
	"slices"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// mixRows are the rows of a mixed-traffic group (run --mix): for each
// scenario of the mix, its achieved rate against the offered one and its
// latency from the intended start, so that the effect of the large calls
// on the small ones shows side by side.
func mixRows(g *group) []rowDef {
	var scenarios []api.Scenario
	for _, c := range g.Cells {
		for _, m := range c.Mix {
			if !slices.Contains(scenarios, m.Scenario) {
				scenarios = append(scenarios, m.Scenario)
			}
		}
	}
	var defs []rowDef
	for _, sc := range scenarios {
		stat := func(c *results.Cell, v func(m *results.MixStat) string) string {
			for i := range c.Mix {
				if c.Mix[i].Scenario == sc {
					return v(&c.Mix[i])
				}
			}
			return ""
		}
		defs = append(defs,
			rowDef{string(sc) + ": rate achieved", func(c *results.Cell) string {
				return stat(c, func(m *results.MixStat) string {
					return format.Rate(m.AchievedRate) + "/s of " + format.Rate(m.OfferedRate)
				})
			}},
			rowDef{string(sc) + ": latency p50", func(c *results.Cell) string {
				return stat(c, func(m *results.MixStat) string { return format.US(m.LatencyUS.P50) })
			}},
			rowDef{string(sc) + ": latency p99", func(c *results.Cell) string {
				return stat(c, func(m *results.MixStat) string { return format.US(m.LatencyUS.P99) })
			}},
		)
	}
	return defs
}

// insertAfter inserts more after the row labelled label (at the end when
// there is none).
func insertAfter(defs []rowDef, label string, more []rowDef) []rowDef {
	i := slices.IndexFunc(defs, func(d rowDef) bool { return d.label == label })
	if i < 0 {
		return append(defs, more...)
	}
	return slices.Insert(defs, i+1, more...)
}
