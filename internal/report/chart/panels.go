package chart

import (
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// newPanel returns a plot with the chart fonts and sizes.
func newPanel(title, xLabel, yLabel string, vgrid bool) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sansBold, 10)
	p.Title.Padding = 4
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 9)
		a.Label.TextStyle.Color = gray
		a.Tick.Label.Font = font.From(sans, 8)
		a.Tick.Label.Color = gray
		a.Tick.Color = gray
		a.LineStyle.Color = gray
	}
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	p.Legend.TextStyle.Font = font.From(sans, 8)
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = 14
	p.Legend.Padding = 2
	grid := plotter.NewGrid()
	p.Add(grid)
	grid.Vertical.Color = color.Gray{Y: 0xe6}
	grid.Horizontal.Color = color.Gray{Y: 0xe6}
	grid.Vertical.Width, grid.Horizontal.Width = 0.5, 0.5
	if !vgrid {
		grid.Vertical.Width = 0
	}
	return p
}

// tickFormat returns f, or a plain number formatter when f is nil.
func tickFormat(f func(float64) string) func(float64) string {
	if f != nil {
		return f
	}
	return func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }
}

// A LatencyPanel is a percentile plot, log-log: one line per series.
type LatencyPanel struct {
	Title  string
	YLabel string // with its unit: "latency (ms)"
	Lines  []Line
	// Tick formats a y tick value (in the unit of the points).
	Tick func(float64) string
}

// A Line is one latency curve.
type Line struct {
	Name   string // legend entry
	Color  color.Color
	Dashed bool
	Points []Point // in increasing Q
}

// A Point is a latency at a quantile: the fraction Q (0 <= Q <=
// MaxQuantile) of calls took at most V (in the panel's unit, > 0).
type Point struct{ Q, V float64 }

// pctX maps a quantile to the x axis of a percentile plot: 1/(1-q), so
// 50%, 90%, 99%, 99.9% are evenly spaced on a log axis.
func pctX(q float64) float64 { return 1 / (1 - q) }

// maxPctX bounds the x axis (99.999%): the maximum, q = 1, has no place on it.
const maxPctX = 1e5

// MaxQuantile is the highest quantile a latency panel shows (99.999%):
// the maximum, q = 1, has no place on a percentile axis.
const MaxQuantile = 1 - 1/maxPctX

func (lp *LatencyPanel) plot() *plot.Plot {
	lo, hi := math.Inf(1), 0.0
	for _, l := range lp.Lines {
		for _, pt := range l.Points {
			if plottable(pt.V) {
				lo, hi = math.Min(lo, pt.V), math.Max(hi, pt.V)
			}
		}
	}
	p := newPanel(lp.Title, "percentile", lp.YLabel, true)
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = percentileTicks{}
	p.Y.Tick.Marker = logTicks{format: tickFormat(lp.Tick)}
	p.Legend.Left = true
	maxX := 1.0
	for _, s := range lp.Lines {
		var xys plotter.XYs
		for _, pt := range s.Points {
			if x := pctX(pt.Q); pt.Q >= 0 && x <= maxPctX && plottable(pt.V) {
				xys = append(xys, plotter.XY{X: x, Y: pt.V})
			}
		}
		if len(xys) < 2 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			continue
		}
		l.Color = s.Color
		l.Width = 1.5
		if s.Dashed {
			l.Dashes = []vg.Length{4, 2}
		}
		p.Add(l)
		p.Legend.Add(s.Name, l)
		maxX = math.Max(maxX, xys[len(xys)-1].X)
	}
	p.X.Min, p.X.Max = 1, math.Max(10, math.Pow(10, math.Ceil(math.Log10(maxX)-1e-9)))
	p.Y.Min, p.Y.Max = logRange(lo/1.15, hi*1.6) // headroom for the legend
	return p
}

// maxDecades bounds a log axis: a range wider than this many powers of ten
// is cut at its bottom. No chart here needs more, and the tick loops stay
// short whatever the data (a 1e-323 latency once made them endless).
const maxDecades = 12

// plottable reports whether v can sit on a log axis: positive and finite.
func plottable(v float64) bool { return v > 0 && !math.IsInf(v, 1) }

// logRange makes [lo, hi] a range a log axis can draw: both positive and
// finite, lo below hi, at most maxDecades apart (lo raised to fit). Data
// below lo is clipped by the plot; nothing else changes.
func logRange(lo, hi float64) (float64, float64) {
	if !plottable(hi) || hi > math.MaxFloat64/10 {
		hi = math.MaxFloat64 / 10
	}
	if floor := hi / math.Pow(10, maxDecades); !plottable(lo) || lo < floor {
		lo = floor
	}
	if lo >= hi {
		lo, hi = hi/10, hi*10
	}
	if !plottable(lo) { // hi itself was tiny: give the axis a plain decade
		lo, hi = 1, 10
	}
	return lo, hi
}

// percentileTicks labels the percentile axis.
type percentileTicks struct{}

func (percentileTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	labels := []string{"", "90%", "99%", "99.9%", "99.99%", "99.999%"}
	for i, l := range labels {
		v := math.Pow(10, float64(i))
		if v < min*0.999 || v > max*1.001 {
			continue
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: l})
	}
	if 2 >= min && 2 <= max {
		ticks = append(ticks, plot.Tick{Value: 2, Label: "50%"})
	}
	return ticks
}

// logTicks labels a log axis at 1, 2 and 5 times powers of ten (only
// powers of ten when that would be too many), with unlabelled minor ticks.
type logTicks struct{ format func(float64) string }

func (t logTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	min, max = logRange(min, max) // the panels set it so already: a guard for the loop below
	lo, hi := math.Floor(math.Log10(min)), math.Ceil(math.Log10(max))
	steps := []float64{1, 2, 5}
	if hi-lo > 3 {
		steps = []float64{1}
	}
	for e := lo; e <= hi; e++ {
		for m := 1.0; m < 10; m++ {
			v := m * math.Pow(10, e)
			if v < min*0.999 || v > max*1.001 {
				continue
			}
			label := ""
			for _, s := range steps {
				if s == m {
					label = t.format(v)
				}
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label})
		}
	}
	return ticks
}

// linTicks relabels gonum's default linear ticks with a formatter.
type linTicks struct{ format func(float64) string }

func (t linTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = t.format(ticks[i].Value)
		}
	}
	return ticks
}

// A BarPanel is grouped bars: categories on x, one bar per series in each
// category, error bars where Lo < Hi and a label over each bar.
type BarPanel struct {
	Title      string
	YLabel     string // with its unit: "server CPU/call (µs)"
	Categories []string
	Series     []BarSeries
	// Tick formats a y tick value (in the unit of the bars).
	Tick func(float64) string
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
	p := newPanel(bp.Title, "", bp.YLabel, false)
	p.NominalX(bp.Categories...)
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	if long := 0; n > 2 {
		for _, c := range bp.Categories {
			long = max(long, len(c))
		}
		if n*long > 40 { // the labels would overlap side by side: slant them
			p.X.Tick.Label.Rotation = math.Pi / 6
			p.X.Tick.Label.XAlign = draw.XRight
			p.X.Tick.Label.YAlign = draw.YCenter
		}
	}
	p.Y.Min, p.Y.Max = 0, top*1.3 // headroom for the legend and labels
	if !(top > 0) || math.IsInf(p.Y.Max, 1) {
		p.Y.Max = math.Max(1, math.Min(top, math.MaxFloat64/2))
	}
	p.Y.Tick.Marker = linTicks{format: tickFormat(bp.Tick)}
	p.Legend.Left = false

	dataW := panelW - 2*panelPad - 55 // roughly, after the y axis
	width := vg.Length(math.Min(26, float64(dataW)*0.75/float64(max(1, n*len(bp.Series)))))
	for i, s := range bp.Series {
		ex := &barExtras{offset: width * (vg.Length(i) - vg.Length(len(bp.Series)-1)/2)}
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
	return p
}

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
	offset vg.Length
	x, v   []float64
	lo, hi []float64
	labels []string
}

func (e *barExtras) add(x, v, lo, hi float64, label string) {
	e.x, e.v, e.lo, e.hi = append(e.x, x), append(e.v, v), append(e.lo, lo), append(e.hi, hi)
	e.labels = append(e.labels, label)
}

// Plot implements plot.Plotter.
func (e *barExtras) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	line := draw.LineStyle{Color: color.Gray{Y: 0x22}, Width: 0.8}
	st := textStyle(sans, 6.5, color.Gray{Y: 0x22})
	st.XAlign, st.YAlign = draw.XCenter, draw.YBottom
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
