package report

import (
	"gonum.org/v1/plot/vg"

	"github.com/meteorbench/meteorbench/internal/fit"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/report/chart"
	"github.com/meteorbench/meteorbench/internal/results"
)

// fitResources are the resources a fit chart shows, in order, with their
// category labels.
var fitResources = []struct{ key, label string }{
	{results.ResourceCPU, "CPU"},
	{results.ResourceLinkSent, "link sent (requests)"},
	{results.ResourceLinkReceived, "link received (answers)"},
	{results.ResourceMemory, "memory"},
}

// fitFigure is a fit document's answer as a chart: each protocol's
// utilisation of every resource the tier has, against the tier (100%) and
// the headroom line; nil for other documents.
func fitFigure(r *results.Result) *chart.Figure {
	if r.FitPlan == nil || len(r.Fit) == 0 {
		return nil
	}
	p := &chart.BarPanel{
		Title:  "tier " + r.FitPlan.Tier + " · traffic " + r.FitPlan.Traffic,
		YLabel: "utilisation of the tier (%)",
		Tick:   format.Tick,
		Refs: []chart.Ref{
			{Y: 100, Name: "the tier (100%)"},
			{Y: 100 * r.FitPlan.Headroom, Name: "headroom " + format.Percent(r.FitPlan.Headroom), Dashes: []vg.Length{4, 2}},
		},
	}
	var keys []string
	for _, res := range fitResources {
		if _, ok := r.Fit[0].Utilisation[res.key]; ok {
			keys = append(keys, res.key)
			p.Categories = append(p.Categories, res.label)
		}
	}
	for i := range r.Fit {
		f := &r.Fit[i]
		s := chart.BarSeries{Name: string(f.Protocol), Color: protoColor(f.Protocol)}
		for j, k := range keys {
			u, ok := f.Utilisation[k]
			if !ok {
				s.Bars = append(s.Bars, chart.Bar{Category: j, Label: "n/a", NA: true})
				continue
			}
			b := chart.Bar{Category: j, Value: 100 * u, Lo: 100 * u, Hi: 100 * u, Label: format.Percent(u)}
			if ci := f.CPUCoresCI; k == results.ResourceCPU && ci != nil && f.CPUCores > 0 {
				b.Lo, b.Hi = b.Value*ci.Lo/f.CPUCores, b.Value*ci.Hi/f.CPUCores
			}
			s.Bars = append(s.Bars, b)
		}
		p.Series = append(p.Series, s)
	}
	title := "Fit: utilisation of each resource by the traffic (solid: the tier; dashed: the headroom)"
	if b := r.Fit[0].Binding; len(r.Fit) == 1 {
		title += "; binding: " + fit.ResourceName(b)
	}
	return &chart.Figure{Title: title, Panels: []chart.Panel{p}}
}
