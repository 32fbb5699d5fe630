package chart

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// A SeriesPanel is plain x-y lines with markers, both axes logarithmic
// (sizes and ratios), and an optional horizontal reference line: e.g. a
// speed-up against the payload size, with 1x marked.
type SeriesPanel struct {
	Title  string
	XLabel string
	YLabel string
	Series []Series
	// Ref, when > 0, draws a thin gray horizontal line at y = Ref, named
	// RefName in the legend.
	Ref     float64
	RefName string
	// Marks are vertical lines across the panel, each named in the legend:
	// e.g. the rate a capacity search found.
	Marks []Mark
	// XTick and YTick format the tick values; nil means plain numbers.
	XTick, YTick func(float64) string
}

// A Mark is a dotted vertical line at X > 0.
type Mark struct {
	Name  string
	Color color.Color
	X     float64
}

// A Series is one line of a SeriesPanel.
type Series struct {
	Name   string // legend entry
	Color  color.Color
	Dashes []vg.Length // nil: solid
	Points []XY        // in increasing X; X, Y > 0
}

// An XY is one point of a series.
type XY struct{ X, Y float64 }

func (sp *SeriesPanel) plot() *plot.Plot {
	p := newPanel(sp.Title, sp.XLabel, sp.YLabel, true)
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = logTicks{format: tickFormat(sp.XTick)}
	p.Y.Tick.Marker = logTicks{format: tickFormat(sp.YTick)}
	p.Legend.Left = true
	xlo, xhi, ylo, yhi := math.Inf(1), 0.0, math.Inf(1), 0.0
	if plottable(sp.Ref) {
		ylo, yhi = sp.Ref, sp.Ref
	}
	for _, s := range sp.Series {
		var xys plotter.XYs
		for _, pt := range s.Points {
			if plottable(pt.X) && plottable(pt.Y) {
				xys = append(xys, plotter.XY{X: pt.X, Y: pt.Y})
				xlo, xhi = math.Min(xlo, pt.X), math.Max(xhi, pt.X)
				ylo, yhi = math.Min(ylo, pt.Y), math.Max(yhi, pt.Y)
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			continue
		}
		l.Color, pts.Color = s.Color, s.Color
		l.Width = 1.5
		l.Dashes = s.Dashes
		pts.Radius = 2
		p.Add(l, pts)
		p.Legend.Add(s.Name, l, pts)
	}
	if xhi == 0 {
		xlo, xhi = 1, 10
	}
	if plottable(sp.Ref) {
		ref, err := plotter.NewLine(plotter.XYs{{X: xlo, Y: sp.Ref}, {X: xhi, Y: sp.Ref}})
		if err == nil {
			ref.Color = gray
			ref.Width = 0.75
			ref.Dashes = []vg.Length{2, 2}
			p.Add(ref)
			if sp.RefName != "" {
				p.Legend.Add(sp.RefName, ref)
			}
		}
	}
	if math.IsInf(ylo, 1) {
		ylo, yhi = 1, 10
	}
	for _, m := range sp.Marks {
		if plottable(m.X) {
			xlo, xhi = math.Min(xlo, m.X), math.Max(xhi, m.X)
		}
	}
	p.X.Min, p.X.Max = logRange(xlo/1.3, xhi*1.3)
	p.Y.Min, p.Y.Max = logRange(ylo/1.3, yhi*2) // headroom for the legend
	for _, m := range sp.Marks {
		if !plottable(m.X) {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: m.X, Y: p.Y.Min}, {X: m.X, Y: p.Y.Max}})
		if err != nil {
			continue
		}
		l.Color = m.Color
		l.Width = 1
		l.Dashes = []vg.Length{1, 2}
		p.Add(l)
		if m.Name != "" {
			p.Legend.Add(m.Name, l)
		}
	}
	return p
}
