package report

import (
	"slices"

	"gonum.org/v1/plot/vg"

	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/report/chart"
	"github.com/meteorbench/meteorbench/internal/results"
)

// capacityFigure is a capacity search's probes: latency against the
// offered rate, log-log, one panel per scenario and condition; per
// protocol the objective's percentile (solid) and p50 (dashed), the
// objective's bound as a horizontal line and the found rate as a dotted
// vertical one. Void probes (the generator's, not the server's) are left
// out; probes repeated at one rate are drawn at their median.
func capacityFigure(r *results.Result) *chart.Figure {
	f := &chart.Figure{Title: "Capacity: latency against offered rate (log-log; dotted: the rate found)"}
	for _, s := range capSections(r) {
		panel := &chart.SeriesPanel{
			Title: capChartTitle(s, capSections(r)), XLabel: "offered calls/s (log)", YLabel: "latency (ms, from the intended start)",
			XTick: format.Tick, YTick: format.Tick,
		}
		for _, c := range s.Series {
			if panel.Ref == 0 && c.BoundUS > 0 {
				panel.Ref, panel.RefName = c.BoundUS/1e3, "objective "+c.Objective
			}
			pct, p50 := capCurve(c, func(l results.Latency) float64 { return l.At(c.Percentile) }), capCurve(c, func(l results.Latency) float64 { return l.P50 })
			col := protoColor(c.Protocol)
			if len(pct) > 0 {
				panel.Series = append(panel.Series, chart.Series{Name: string(c.Protocol) + " " + capPct(c), Color: col, Points: pct})
			}
			if len(p50) > 0 && c.Percentile != 50 {
				panel.Series = append(panel.Series, chart.Series{Name: string(c.Protocol) + " p50", Color: col, Dashes: []vg.Length{4, 2}, Points: p50})
			}
			if c.Rate > 0 {
				name := string(c.Protocol) + " found " + format.Rate(c.Rate) + "/s"
				switch {
				case c.GeneratorBound > 0:
					name = string(c.Protocol) + " ≥ " + format.Rate(c.Rate) + "/s (generator-bound)"
				case c.LowerBound():
					name = string(c.Protocol) + " ≥ " + format.Rate(c.Rate) + "/s (no rate failed)"
				}
				panel.Marks = append(panel.Marks, chart.Mark{Name: name, Color: col, X: c.Rate})
			}
		}
		if len(panel.Series) > 0 {
			f.Panels = append(f.Panels, panel)
		}
	}
	if len(f.Panels) == 0 {
		return nil
	}
	return f
}

// capChartTitle is a capacity panel's title: the scenario, and the
// condition when the document has several.
func capChartTitle(s *capSection, all []*capSection) string {
	t := string(s.Scenario)
	for _, o := range all {
		if o.Condition != s.Condition {
			if f := s.Condition.Features(); f != "" {
				t += " · " + f
			}
			break
		}
	}
	return t
}

// capCurve is one latency of a series' non-void probes (of every search,
// when repeated) against the offered rate, in ms, in increasing rate, the
// median of the probes at one rate.
func capCurve(c *results.Capacity, lat func(results.Latency) float64) []chart.XY {
	at := map[float64][]float64{}
	var rates []float64
	probes := c.Probes
	for _, s := range c.Searches {
		probes = append(slices.Clip(probes), s.Probes...)
	}
	for _, p := range probes {
		v := lat(p.LatencyUS)
		if p.Verdict == "void" || p.Offered <= 0 || v <= 0 {
			continue
		}
		if _, ok := at[p.Offered]; !ok {
			rates = append(rates, p.Offered)
		}
		at[p.Offered] = append(at[p.Offered], v/1e3)
	}
	slices.Sort(rates)
	var out []chart.XY
	for _, x := range rates {
		vs := at[x]
		slices.Sort(vs)
		m := vs[len(vs)/2]
		if len(vs)%2 == 0 {
			m = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
		}
		out = append(out, chart.XY{X: x, Y: m})
	}
	return out
}
