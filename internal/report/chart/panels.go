package chart

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/meteorbench/meteorbench/internal/format"
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
	return format.Tick
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
