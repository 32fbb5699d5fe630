package chart

import (
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// A BarPanel is grouped bars: categories on x, one bar per series in each
// category, error bars where Lo < Hi and a label over each bar.
type BarPanel struct {
	Title      string
	YLabel     string // with its unit: "server CPU/call (µs)"
	Categories []string
	Series     []BarSeries
	// Tick formats a y tick value (in the unit of the bars).
	Tick func(float64) string
	// Refs are horizontal lines across the panel (a limit, a target),
	// each named in the legend.
	Refs []Ref
}

// A Ref is a horizontal reference line at Y, dashed when Dashes is set.
type Ref struct {
	Y      float64
	Name   string
	Dashes []vg.Length
}

// A BarSeries is one colour of bars, at most one per category. A category
// without a Bar gets no bar at all (not measured).
type BarSeries struct {
	Name  string
	Color color.Color
	Bars  []Bar
}

// A Bar is one value; Lo < Hi draws an error bar. NA marks a measured
// category without this value: its Label only, no bar.
type Bar struct {
	Category      int
	Value, Lo, Hi float64
	Label         string
	NA            bool
}

func (bp *BarPanel) plot() *plot.Plot {
	n := len(bp.Categories)
	top := 0.0
	for _, s := range bp.Series {
		for _, b := range s.Bars {
			if !b.NA {
				top = math.Max(top, math.Max(b.Value, b.Hi))
			}
		}
	}
	for _, r := range bp.Refs {
		top = math.Max(top, r.Y)
	}
	p := newPanel(bp.Title, "", bp.YLabel, false)
	dataW := panelW - 2*panelPad - 55 // roughly, after the y axis
	xAxisH := bp.categoryLabels(p, dataW)
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	p.Y.Tick.Marker = linTicks{format: tickFormat(bp.Tick)}
	p.Legend.Left = false

	width := vg.Length(math.Min(26, float64(dataW)*0.75/float64(max(1, n*len(bp.Series)))))
	// A value label wider than its bar would run into its neighbours'
	// ("318321337"): then every label of the panel stands upright.
	vertical, labelH := false, vg.Length(9)
	for _, s := range bp.Series {
		for _, b := range s.Bars {
			if w := valueLabelStyle().Width(b.Label); w > width-1 {
				vertical, labelH = true, max(labelH, w+3)
			}
		}
	}
	// Headroom above the highest bar for its label and the legend (top
	// right), in the share of the data area's height they take.
	dataH := panelH - 2*panelPad - 20 - xAxisH
	legendH := vg.Length(10*len(bp.Series) + 4)
	room := float64(dataH-legendH-labelH) / float64(dataH)
	p.Y.Min, p.Y.Max = 0, top/math.Max(room, 0.3)
	if !(top > 0) || math.IsInf(p.Y.Max, 1) {
		p.Y.Max = math.Max(1, math.Min(top, math.MaxFloat64/2))
	}
	for i, s := range bp.Series {
		ex := &barExtras{offset: width * (vg.Length(i) - vg.Length(len(bp.Series)-1)/2), vertical: vertical}
		var swatch plot.Thumbnailer
		for _, bar := range s.Bars {
			if bar.NA {
				ex.add(float64(bar.Category), 0, 0, 0, bar.Label)
				continue
			}
			ex.add(float64(bar.Category), bar.Value, bar.Lo, bar.Hi, bar.Label)
			// One chart per bar, so a missing category leaves a gap rather
			// than a zero-height bar.
			b, err := plotter.NewBarChart(plotter.Values{bar.Value}, width)
			if err != nil {
				continue
			}
			b.Color = s.Color
			b.LineStyle.Width = 0
			b.Offset = ex.offset
			b.XMin = float64(bar.Category)
			p.Add(b)
			if swatch == nil {
				swatch = b
			}
		}
		if len(ex.x) == 0 {
			continue
		}
		p.Add(ex)
		if swatch == nil {
			swatch = &swatchOf{s.Color} // every value n/a
		}
		p.Legend.Add(s.Name, swatch)
	}
	for _, r := range bp.Refs {
		if l, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: r.Y}, {X: p.X.Max, Y: r.Y}}); err == nil {
			l.Color, l.Width, l.Dashes = color.Gray{Y: 0x55}, 0.8, r.Dashes
			p.Add(l)
			p.Legend.Add(r.Name, l)
		}
	}
	return p
}

// categoryLabels sets the x axis' category labels and returns about how
// much height they take. Side by side when they fit their slot; else
// broken into lines at " · "; else, still too wide, slanted (a slanted
// label reaching past the panel's left edge was cut there).
func (bp *BarPanel) categoryLabels(p *plot.Plot, dataW vg.Length) vg.Length {
	st := p.X.Tick.Label
	slot := dataW / vg.Length(max(1, len(bp.Categories)))
	widest := func(labels []string) vg.Length {
		var w vg.Length
		for _, l := range labels {
			w = max(w, st.Width(l))
		}
		return w
	}
	labels := bp.Categories
	if widest(labels) > slot*0.95 {
		labels = make([]string, len(bp.Categories))
		for i, c := range bp.Categories {
			labels[i] = strings.ReplaceAll(c, " · ", "\n")
		}
	}
	p.NominalX(labels...)
	lines := 1
	for _, l := range labels {
		lines = max(lines, strings.Count(l, "\n")+1)
	}
	h := vg.Length(10*lines + 12)
	if w := widest(labels); w > slot*0.95 {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
		h = w/2 + vg.Length(10*lines) + 12
	}
	return h
}

// valueLabelStyle is the style of the labels over the bars.
func valueLabelStyle() text.Style { return textStyle(sans, 6.5, color.Gray{Y: 0x22}) }

// swatchOf is a legend thumbnail: a filled square of one colour.
type swatchOf struct{ color color.Color }

// Thumbnail implements plot.Thumbnailer.
func (s *swatchOf) Thumbnail(c *draw.Canvas) {
	c.SetColor(s.color)
	c.Fill(c.Rectangle.Path())
}

// barExtras draws, for one series of bars, the error bars and the value
// labels; offset is the series' bar offset within a category.
type barExtras struct {
	offset   vg.Length
	vertical bool // labels upright, reading upwards: they would overlap level
	x, v     []float64
	lo, hi   []float64
	labels   []string
}

func (e *barExtras) add(x, v, lo, hi float64, label string) {
	e.x, e.v, e.lo, e.hi = append(e.x, x), append(e.v, v), append(e.lo, lo), append(e.hi, hi)
	e.labels = append(e.labels, label)
}

// Plot implements plot.Plotter.
func (e *barExtras) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	line := draw.LineStyle{Color: color.Gray{Y: 0x22}, Width: 0.8}
	st := valueLabelStyle()
	st.XAlign, st.YAlign = draw.XCenter, draw.YBottom
	if e.vertical {
		st.Rotation, st.XAlign, st.YAlign = math.Pi/2, draw.XLeft, draw.YCenter
	}
	for i := range e.x {
		x := trX(e.x[i]) + e.offset
		top := e.v[i]
		if e.hi[i] > e.lo[i] {
			ylo, yhi := trY(math.Max(e.lo[i], 0)), trY(e.hi[i])
			c.StrokeLine2(line, x, ylo, x, yhi)
			c.StrokeLine2(line, x-2.5, ylo, x+2.5, ylo)
			c.StrokeLine2(line, x-2.5, yhi, x+2.5, yhi)
			top = math.Max(top, e.hi[i])
		}
		c.FillText(st, vg.Point{X: x, Y: trY(top) + 3}, e.labels[i])
	}
}

// DataRange implements plot.DataRanger.
func (e *barExtras) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), 0, 0
	for i := range e.x {
		xmin, xmax = math.Min(xmin, e.x[i]), math.Max(xmax, e.x[i])
		ymax = math.Max(ymax, math.Max(e.v[i], e.hi[i]))
	}
	return
}
