package report

import (
	"slices"

	"gonum.org/v1/plot/vg"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/report/chart"
	"github.com/meteorbench/meteorbench/internal/results"
)

// scenarioDashes tells the scenarios apart in the speed-up panel (the
// colour is the protocol's).
var scenarioDashes = map[api.Scenario][]vg.Length{
	api.Large:  nil,
	api.Stream: {5, 2},
	api.Post:   {1.5, 2},
}

// speedupFigure is the p50 speed-up over REST (REST p50 / protocol p50)
// against the payload size, from the cells of a --records sweep: one line
// per protocol per scenario (and condition, when several), 1x marked.
// Batches are pooled by their median, as the verdicts pool them.
func speedupFigure(r *results.Result) *chart.Figure {
	type lineKey struct {
		scenario api.Scenario
		cond     results.Condition // Records zeroed
		proto    api.Protocol
	}
	type pointKey struct {
		lineKey
		records int
	}
	p50s := map[pointKey][]float64{}
	var lines []lineKey
	conds := map[results.Condition]bool{}
	for i := range r.Cells {
		c := &r.Cells[i]
		v, ok := c.Figure(results.FigLatencyP50)
		if c.Records == 0 || !ok || v <= 0 {
			continue
		}
		k := lineKey{c.Scenario, c.Condition, c.Protocol}
		k.cond.Records = 0
		conds[k.cond] = true
		if !slices.Contains(lines, k) {
			lines = append(lines, k)
		}
		pk := pointKey{k, c.Records}
		p50s[pk] = append(p50s[pk], v)
	}
	med := func(k pointKey) (float64, bool) {
		vs := slices.Clone(p50s[k])
		if len(vs) == 0 {
			return 0, false
		}
		slices.Sort(vs)
		if n := len(vs); n%2 == 0 {
			return (vs[n/2-1] + vs[n/2]) / 2, true
		} else {
			return vs[n/2], true
		}
	}
	sizes := map[lineKey][]int{}
	for k := range p50s {
		sizes[k.lineKey] = append(sizes[k.lineKey], k.records)
	}
	panel := &chart.SeriesPanel{
		Title: "p50 speed-up over REST", XLabel: "records per call (log)", YLabel: "REST p50 / protocol p50",
		Ref: 1, RefName: "1x (as fast as REST)", XTick: format.Tick,
		YTick: func(v float64) string { return format.Tick(v) + "x" },
	}
	for _, k := range lines {
		if k.proto == api.REST {
			continue
		}
		ns := sizes[k]
		slices.Sort(ns)
		var pts []chart.XY
		for _, n := range ns {
			base, ok1 := med(pointKey{lineKey{k.scenario, k.cond, api.REST}, n})
			v, ok2 := med(pointKey{k, n})
			if ok1 && ok2 {
				pts = append(pts, chart.XY{X: float64(n), Y: base / v})
			}
		}
		if len(pts) < 2 {
			continue
		}
		name := string(k.scenario) + " " + string(k.proto)
		if len(conds) > 1 {
			name += " (" + k.cond.Label() + ")"
		}
		panel.Series = append(panel.Series, chart.Series{Name: name, Color: protoColor(k.proto), Dashes: scenarioDashes[k.scenario], Points: pts})
	}
	if len(panel.Series) == 0 {
		return nil
	}
	return &chart.Figure{Title: "Speed-up against payload size (p50; above 1x: faster than REST)", Panels: []chart.Panel{panel}}
}
