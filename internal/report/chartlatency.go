package report

import (
	"math"

	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/report/chart"
	"github.com/meteorbench/meteorbench/internal/results"
)

// latencyFigure has one percentile panel per group, protocols overlaid.
func latencyFigure(groups []*group) *chart.Figure {
	f := &chart.Figure{Title: "Latency by percentile (log-log; open loop: dashed = uncorrected)"}
	for _, g := range groups {
		if p := latencyPanel(g); p != nil {
			f.Panels = append(f.Panels, p)
		}
	}
	if len(f.Panels) == 0 {
		return nil
	}
	return f
}

// latencyPanel is a group's latency curves: each cell's recorded
// distribution (its percentiles when none was recorded), and in open loop
// the uncorrected percentiles dashed.
func latencyPanel(g *group) *chart.LatencyPanel {
	type curve struct {
		line chart.Line
		pts  []chart.Point // in µs
	}
	var curves []curve
	hi := 0.0
	for _, c := range g.Cells {
		if c.Calls == 0 {
			continue
		}
		var pts []chart.Point
		for _, q := range c.Distribution {
			if q.Q >= 0 && q.Q <= chart.MaxQuantile && q.US > 0 {
				pts = append(pts, chart.Point{Q: q.Q, V: q.US})
			}
		}
		if len(pts) < 2 {
			pts = percentilePoints(&c.LatencyUS) // no curve recorded: the percentiles
		}
		lines := []curve{{chart.Line{Name: string(c.Protocol), Color: protoColor(c.Protocol)}, pts}}
		if u := c.LatencyUncorrectedUS; u != nil {
			lines = append(lines, curve{chart.Line{Name: string(c.Protocol) + " (uncorrected)", Color: protoColor(c.Protocol), Dashed: true}, percentilePoints(u)})
		}
		for _, l := range lines {
			if len(l.pts) < 2 {
				continue
			}
			for _, p := range l.pts {
				hi = math.Max(hi, p.V)
			}
			curves = append(curves, l)
		}
	}
	if len(curves) == 0 {
		return nil
	}
	u := format.USUnit(hi)
	p := &chart.LatencyPanel{Title: g.chartTitle(), YLabel: "latency (" + u.Name + ")", Tick: format.Tick}
	for _, c := range curves {
		for i := range c.pts {
			c.pts[i].V /= u.Div
		}
		c.line.Points = c.pts
		p.Lines = append(p.Lines, c.line)
	}
	return p
}

// percentilePoints is the percentile curve of a Latency: p50..p99.9.
func percentilePoints(l *results.Latency) []chart.Point {
	var pts []chart.Point
	for _, pt := range []struct{ q, us float64 }{{0.5, l.P50}, {0.9, l.P90}, {0.99, l.P99}, {0.999, l.P999}} {
		if pt.us > 0 {
			pts = append(pts, chart.Point{Q: pt.q, V: pt.us})
		}
	}
	return pts
}
