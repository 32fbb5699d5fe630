package report

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"

	"github.com/meteorbench/meteorbench/api"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/meteorbench/meteorbench/internal/results"
)

// Charts are drawn with gonum.org/v1/plot. A chart is a figure: a title
// and a grid of panels, one panel per scenario (and batch, for latency).
// The svg and png formats draw every figure into one image (the
// "dashboard"); the html format inlines each figure as its own SVG.
//
// Fonts: text is laid out with Liberation Sans metrics and the SVG names
// "Liberation Sans, Arial, Helvetica, sans-serif": Arial has the same
// metrics, so labels fit without embedding a font in the file.

const (
	panelW       = 300 * vg.Inch / 72 // 300pt
	panelH       = 225 * vg.Inch / 72
	figTitleH    = 26 * vg.Inch / 72
	headerLineH  = 16 * vg.Inch / 72
	panelPad     = 8 * vg.Inch / 72
	dashboardCol = 4
	htmlCols     = 2
	pngDPI       = 96
)

var (
	sans     = font.Font{Typeface: "Liberation", Variant: "Sans"}
	sansBold = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: xfont.WeightBold}
	gray     = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
	red      = color.RGBA{R: 0xc0, G: 0x1c, B: 0x28, A: 0xff}
)

// protoColor is a protocol's colour in every chart (Okabe-Ito, safe for
// colour-blind readers).
func protoColor(p api.Protocol) color.Color {
	switch p {
	case api.REST:
		return color.RGBA{R: 0xD5, G: 0x5E, B: 0x00, A: 0xff} // vermillion
	case api.RESTProtobuf:
		return color.RGBA{R: 0x00, G: 0x9E, B: 0x73, A: 0xff} // bluish green
	case api.GRPC:
		return color.RGBA{R: 0x00, G: 0x72, B: 0xB2, A: 0xff} // blue
	}
	palette := []color.Color{
		color.RGBA{R: 0xCC, G: 0x79, B: 0xA7, A: 0xff},
		color.RGBA{R: 0xE6, G: 0x9F, B: 0x00, A: 0xff},
		color.RGBA{R: 0x56, G: 0xB4, B: 0xE9, A: 0xff},
	}
	h := 0
	for _, r := range p {
		h = h*31 + int(r)
	}
	return palette[(h%len(palette)+len(palette))%len(palette)]
}

func textStyle(f font.Font, size vg.Length, c color.Color) text.Style {
	return text.Style{Color: c, Font: font.From(f, size), Handler: plot.DefaultTextHandler}
}

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

// A figure is one chart: a title and its panels.
type figure struct {
	Title  string
	Panels []*plot.Plot
}

// size is the figure's size laid out in cols columns.
func (f *figure) size(cols int) (w, h vg.Length) {
	cols = min(cols, len(f.Panels))
	rows := (len(f.Panels) + cols - 1) / cols
	return vg.Length(cols) * panelW, figTitleH + vg.Length(rows)*panelH
}

// draw lays the figure out in cols columns, its top-left corner at top.
func (f *figure) draw(c draw.Canvas, top vg.Point, cols int) {
	cols = min(cols, len(f.Panels))
	st := textStyle(sansBold, 12, color.Black)
	st.YAlign = draw.YTop
	c.FillText(st, vg.Point{X: top.X + panelPad, Y: top.Y - 6}, f.Title)
	y0 := top.Y - figTitleH
	for i, p := range f.Panels {
		col, row := i%cols, i/cols
		min := vg.Point{X: top.X + vg.Length(col)*panelW + panelPad, Y: y0 - vg.Length(row+1)*panelH + panelPad}
		max := vg.Point{X: top.X + vg.Length(col+1)*panelW - panelPad, Y: y0 - vg.Length(row)*panelH - panelPad}
		p.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{Min: min, Max: max}})
	}
}

// figures builds every chart of r, in reading order: latency, throughput,
// bytes, server CPU, time per batch. Figures without data are left out.
func figures(r *results.Result) []*figure {
	groups := groupCells(r)
	var out []*figure
	if f := latencyFigure(groups); f != nil {
		out = append(out, f)
	}
	fams := families(r, groups)
	type barDef struct {
		title, ylabel string
		k             kind
		value         func(c *results.Cell) (v, lo, hi float64, ok bool)
	}
	ci := func(fig results.Figure) func(c *results.Cell) (float64, float64, float64, bool) {
		return func(c *results.Cell) (float64, float64, float64, bool) {
			v, ok := figureValue(c, fig)
			if !ok || !hasCalls(c) {
				return 0, 0, 0, false
			}
			if iv, ok := interval(c, fig); ok {
				return iv.Median, iv.Lo, iv.Hi, true
			}
			return v, v, v, true
		}
	}
	defs := []barDef{
		{"Throughput", "calls/s", kindRate, ci("calls_per_s")},
		{"Bytes on the wire per call (sent + received)", "bytes/call", kindBytes, func(c *results.Cell) (float64, float64, float64, bool) {
			v := c.BytesPerCall.Sent + c.BytesPerCall.Received
			return v, v, v, hasCalls(c)
		}},
		{"Server CPU per call", "server CPU/call", kindUS, ci("server_cpu_us_per_call")},
		{"Time per batch (error bars: ± stddev, or the interval over repeats)", "time/batch", kindMS, func(c *results.Cell) (float64, float64, float64, bool) {
			m, ok := figureValue(c, "batch_ms_mean")
			if !ok || c.Batches == 0 {
				return 0, 0, 0, false
			}
			if iv, ok := interval(c, "batch_ms_mean"); ok {
				return iv.Median, iv.Lo, iv.Hi, true
			}
			return m, m - c.BatchMS.Stddev, m + c.BatchMS.Stddev, true
		}},
	}
	if r.Settings.Repeat > 1 {
		defs[0].title += " (error bars: interval over repeats)"
		defs[2].title += " (error bars: interval over repeats)"
	}
	for _, d := range defs {
		f := &figure{Title: d.title}
		for _, fam := range fams {
			if p := barPanel(fam, d.ylabel, d.k, d.value); p != nil {
				f.Panels = append(f.Panels, p)
			}
		}
		if len(f.Panels) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// A familyOf groups is one scenario (at one open-loop rate): the groups
// its bar panel puts side by side as categories.
type familyOf struct {
	title  string
	groups []*group
	labels []string // category labels
	protos []api.Protocol
}

func families(r *results.Result, groups []*group) []*familyOf {
	batches, concs := map[int]bool{}, map[int]bool{}
	for _, g := range groups {
		batches[g.Batch] = true
		concs[g.Concurrency] = true
	}
	var out []*familyOf
	byKey := map[string]*familyOf{}
	for _, g := range groups {
		key := fmt.Sprintf("%s/%g", g.Scenario, g.Rate)
		f := byKey[key]
		if f == nil {
			title := g.Scenario.Title()
			if g.Rate > 0 {
				title += " @ " + fmtRate(g.Rate) + "/s"
			}
			f = &familyOf{title: title}
			byKey[key] = f
			out = append(out, f)
		}
		var label string
		switch {
		case len(concs) > 1 && len(batches) > 1:
			label = fmt.Sprintf("b%d c%d", g.Batch, g.Concurrency)
		case len(concs) > 1:
			label = fmt.Sprintf("concurrency %d", g.Concurrency)
		default:
			label = fmt.Sprintf("batch %d", g.Batch)
		}
		f.groups = append(f.groups, g)
		f.labels = append(f.labels, label)
	}
	for _, f := range out {
		var cells []results.Cell
		for _, g := range f.groups {
			for _, c := range g.Cells {
				cells = append(cells, *c)
			}
		}
		f.protos = protocols(cells)
	}
	return out
}

// latencyFigure draws one percentile panel per group, protocols overlaid.
func latencyFigure(groups []*group) *figure {
	f := &figure{Title: "Latency by percentile (log-log; open loop: dashed = uncorrected)"}
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

// pctX maps a quantile to the x axis of a percentile plot: 1/(1-q), so
// 50%, 90%, 99%, 99.9% are evenly spaced on a log axis.
func pctX(q float64) float64 { return 1 / (1 - q) }

// maxPctX bounds the x axis (99.999%): the maximum, q = 1, has no place on it.
const maxPctX = 1e5

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

// tickNum formats a tick value: three significant digits, no trailing
// zeros ("50", "2.5", "25,000").
func tickNum(v float64) string {
	s := sig3(v)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
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

func latencyPanel(g *group) *plot.Plot {
	type series struct {
		proto  api.Protocol
		xys    plotter.XYs
		dashed bool
	}
	var ss []series
	lo, hi := math.Inf(1), 0.0
	add := func(s series) {
		for _, p := range s.xys {
			lo, hi = math.Min(lo, p.Y), math.Max(hi, p.Y)
		}
		ss = append(ss, s)
	}
	for _, c := range g.Cells {
		if !hasCalls(c) {
			continue
		}
		s := series{proto: c.Protocol}
		for _, q := range c.Distribution {
			if q.Q >= 0 && q.Q < 1 && pctX(q.Q) <= maxPctX && q.US > 0 {
				s.xys = append(s.xys, plotter.XY{X: pctX(q.Q), Y: q.US})
			}
		}
		if len(s.xys) < 2 {
			s.xys = percentilePoints(&c.LatencyUS) // no curve recorded: the percentiles
		}
		if len(s.xys) >= 2 {
			add(s)
		}
		if u := c.LatencyUncorrectedUS; u != nil {
			if xys := percentilePoints(u); len(xys) >= 2 {
				add(series{proto: c.Protocol, xys: xys, dashed: true})
			}
		}
	}
	if len(ss) == 0 {
		return nil
	}
	u := durUnit(hi)
	p := newPanel(g.chartTitle(), "percentile", "latency ("+u.name+")", true)
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = percentileTicks{}
	p.Y.Tick.Marker = logTicks{format: func(v float64) string { return tickNum(v / u.div) }}
	p.Legend.Left = true
	maxX := 1.0
	for _, s := range ss {
		l, err := plotter.NewLine(s.xys)
		if err != nil {
			continue
		}
		l.Color = protoColor(s.proto)
		l.Width = 1.5
		name := string(s.proto)
		if s.dashed {
			l.Dashes = []vg.Length{4, 2}
			name += " (uncorrected)"
		}
		p.Add(l)
		p.Legend.Add(name, l)
		maxX = math.Max(maxX, s.xys[len(s.xys)-1].X)
	}
	p.X.Min, p.X.Max = 1, math.Max(10, math.Pow(10, math.Ceil(math.Log10(maxX)-1e-9)))
	p.Y.Min, p.Y.Max = lo/1.15, hi*1.6 // headroom for the legend
	return p
}

// percentilePoints is the percentile curve of a Latency: p50..p99.9.
func percentilePoints(l *results.Latency) plotter.XYs {
	var xys plotter.XYs
	for _, pt := range []struct{ q, us float64 }{{0.5, l.P50}, {0.9, l.P90}, {0.99, l.P99}, {0.999, l.P999}} {
		if pt.us > 0 {
			xys = append(xys, plotter.XY{X: pctX(pt.q), Y: pt.us})
		}
	}
	return xys
}

// barPanel draws one family as grouped bars: categories on x, one bar
// per protocol, error bars where lo < hi and the value over each bar.
func barPanel(f *familyOf, ylabel string, k kind, value func(*results.Cell) (v, lo, hi float64, ok bool)) *plot.Plot {
	n := len(f.groups)
	top := 0.0
	any := false
	for _, g := range f.groups {
		for _, c := range g.Cells {
			if v, _, hi, ok := value(c); ok {
				any = true
				top = math.Max(top, math.Max(v, hi))
			}
		}
	}
	if !any || top <= 0 {
		return nil
	}
	var u unit
	switch k {
	case kindUS:
		u = durUnit(top)
	case kindMS:
		u = durUnit(top * 1e3)
		u.div /= 1e3
	case kindBytes:
		u = byteUnit(top)
	default:
		u = unit{1, ""}
	}
	label := ylabel
	if u.name != "" {
		label += " (" + u.name + ")"
	}
	p := newPanel(f.title, "", label, false)
	p.NominalX(f.labels...)
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	p.Y.Min, p.Y.Max = 0, top/u.div*1.3 // headroom for the legend and labels
	p.Y.Tick.Marker = linTicks{format: tickNum}
	p.Legend.Left = false

	dataW := panelW - 2*panelPad - 55 // roughly, after the y axis
	width := vg.Length(math.Min(26, float64(dataW)*0.75/float64(n*len(f.protos))))
	for i, proto := range f.protos {
		ex := &barExtras{offset: width * (vg.Length(i) - vg.Length(len(f.protos)-1)/2), color: protoColor(proto)}
		var swatch plot.Thumbnailer
		for j, g := range f.groups {
			c := g.cell(proto)
			if c == nil {
				continue // not measured: no bar at all
			}
			v, lo, hi, ok := value(c)
			if !ok {
				ex.add(float64(j), 0, 0, 0, "n/a")
				continue
			}
			ex.add(float64(j), v/u.div, lo/u.div, hi/u.div, barLabel(v, k, u))
			// One chart per bar, so a missing cell leaves a gap rather
			// than a zero-height bar.
			b, err := plotter.NewBarChart(plotter.Values{v / u.div}, width)
			if err != nil {
				continue
			}
			b.Color = protoColor(proto)
			b.LineStyle.Width = 0
			b.Offset = ex.offset
			b.XMin = float64(j)
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
			swatch = &swatchOf{protoColor(proto)} // every value n/a
		}
		p.Legend.Add(string(proto), swatch)
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

func barLabel(v float64, k kind, u unit) string {
	switch k {
	case kindBytes:
		return bytesNum(v/u.div, u)
	case kindRate:
		return fmtRate(v)
	default:
		return sig3(v / u.div)
	}
}

// barExtras draws, for one series of bars, the error bars and the value
// labels; offset is the series' bar offset within a category.
type barExtras struct {
	offset      vg.Length
	color       color.Color
	x, v        []float64
	lo, hi      []float64
	labels      []string
	labelsStyle text.Style
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

// dashboardHeader is the text above the dashboard's figures.
func dashboardHeader(r *results.Result) []string {
	e := &r.Env
	lines := []string{"meteorbench: REST vs gRPC, side by side"}
	if r.Interrupted {
		lines = append(lines, interruptedBanner)
	}
	goexp := e.GoExperiment
	if goexp == "" {
		goexp = "none"
	}
	lines = append(lines,
		fmt.Sprintf("meteorbench %s · %s (GOEXPERIMENT=%s) · grpc %s · protobuf %s",
			e.MeteorbenchVersion, e.GoVersion, goexp, e.GRPCVersion, e.ProtobufVersion),
		fmt.Sprintf("%s · %d CPUs, GOMAXPROCS=%d · %s %s · %s",
			orNA(e.CPUModel), e.NumCPU, e.GOMAXPROCS, e.OS, e.Arch, r.Started.UTC().Format("2006-01-02 15:04 MST")),
		loadLine(&r.Settings))
	if r.Settings.Repeat > 1 {
		lines = append(lines, "repeats: "+repeatLine(r))
	}
	return lines
}

// renderDashboard draws all figures of r on one canvas made by newCanvas.
func renderDashboard(r *results.Result, newCanvas func(w, h vg.Length) vg.CanvasWriterTo) vg.CanvasWriterTo {
	figs := figures(r)
	header := dashboardHeader(r)
	styles := make([]text.Style, len(header))
	w := 2 * panelW
	h := vg.Length(len(header))*headerLineH + 10
	for i, l := range header {
		st := textStyle(sans, 10, gray)
		switch {
		case i == 0:
			st = textStyle(sansBold, 14, color.Black)
		case l == interruptedBanner:
			st = textStyle(sansBold, 12, red)
		}
		st.YAlign = draw.YTop
		styles[i] = st
		w = max(w, st.Rectangle(l).Max.X+2*panelPad)
	}
	for _, f := range figs {
		fw, fh := f.size(dashboardCol)
		w, h = max(w, fw), h+fh
	}
	if len(figs) == 0 {
		h += headerLineH
	}
	cv := newCanvas(w, h)
	c := draw.New(cv)
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	y := h - 6
	for i, l := range header {
		c.FillText(styles[i], vg.Point{X: panelPad, Y: y}, l)
		y -= headerLineH
	}
	if len(figs) == 0 {
		st := textStyle(sans, 10, color.Black)
		st.YAlign = draw.YTop
		c.FillText(st, vg.Point{X: panelPad, Y: y}, "no cells were measured")
	}
	y -= 10
	for _, f := range figs {
		f.draw(c, vg.Point{X: 0, Y: y}, dashboardCol)
		_, fh := f.size(dashboardCol)
		y -= fh
	}
	return cv
}

// svgFonts makes the SVG name fonts a browser has: Arial shares Liberation
// Sans's metrics.
var svgFonts = strings.NewReplacer(
	"font-family:Liberation Sans;", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;",
)

func newSVG(w, h vg.Length) vg.CanvasWriterTo { return vgsvg.New(w, h) }

func finishSVG(cv vg.CanvasWriterTo) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := cv.WriteTo(&buf); err != nil {
		return nil, err
	}
	return []byte(svgFonts.Replace(buf.String())), nil
}

// writeSVG draws the dashboard as SVG: same result, same bytes.
func writeSVG(w io.Writer, r *results.Result) (err error) {
	defer recoverPlot(&err)
	b, err := finishSVG(renderDashboard(r, newSVG))
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// writePNG draws the dashboard as a PNG at 96 dpi.
func writePNG(w io.Writer, r *results.Result) (err error) {
	defer recoverPlot(&err)
	cv := renderDashboard(r, func(w, h vg.Length) vg.CanvasWriterTo {
		return vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(pngDPI))}
	})
	_, err = cv.WriteTo(w)
	return err
}

// figureSVG draws one figure as SVG, cols panels wide.
func figureSVG(f *figure, cols int) (b []byte, err error) {
	defer recoverPlot(&err)
	w, h := f.size(cols)
	cv := vgsvg.New(w, h)
	c := draw.New(cv)
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	f.draw(c, vg.Point{X: 0, Y: h}, cols)
	return finishSVG(cv)
}

// recoverPlot turns a gonum/plot panic (it panics on impossible ranges)
// into an error: a bad document must not crash the command.
func recoverPlot(err *error) {
	if v := recover(); v != nil {
		*err = fmt.Errorf("drawing charts: %v", v)
	}
}
