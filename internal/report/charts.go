package report

import (
	"context"
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/report/chart"
	"github.com/meteorbench/meteorbench/internal/results"
)

// This file picks the charts' data from the cells; package chart draws it.
// A chart is a figure: a title and a grid of panels, one panel per scenario
// (and batch, for latency). The svg and png formats draw every figure into
// one image (the "dashboard"); the html format inlines each figure.

// htmlCols is how many panels wide the html format lays a figure out.
const htmlCols = 2

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

// A barValue is one bar's value with its error bar: lo == hi for none.
type barValue func(c *results.Cell) (v, lo, hi float64, ok bool)

// figures builds every chart of r, in reading order: latency, throughput,
// bytes, server CPU, time per batch. Figures without data are left out.
func figures(r *results.Result) []*chart.Figure {
	groups := groupCells(r)
	var out []*chart.Figure
	if f := latencyFigure(groups); f != nil {
		out = append(out, f)
	}
	fams := families(groups)
	ci := func(fig results.Figure) barValue {
		return func(c *results.Cell) (float64, float64, float64, bool) {
			v, ok := c.Figure(fig)
			if !ok {
				return 0, 0, 0, false
			}
			if iv, ok := interval(c, fig); ok {
				return iv.Median, iv.Lo, iv.Hi, true
			}
			return v, v, v, true
		}
	}
	type barDef struct {
		title, ylabel string
		k             format.Kind
		value         barValue
	}
	defs := []barDef{
		{"Throughput", "calls/s", format.KindRate, ci(results.FigCallsPerS)},
		{"Bytes on the wire per call (sent + received)", "bytes/call", format.KindBytes, func(c *results.Cell) (float64, float64, float64, bool) {
			s, ok1 := c.Figure(results.FigBytesSent)
			r, ok2 := c.Figure(results.FigBytesReceived)
			return s + r, s + r, s + r, ok1 && ok2
		}},
		{"Server CPU per call", "server CPU/call", format.KindUS, ci(results.FigServerCPU)},
		{"Time per batch (error bars: ± stddev, or the interval over repeats)", "time/batch", format.KindUS, func(c *results.Cell) (float64, float64, float64, bool) {
			m, ok := c.Figure(results.FigBatchMS)
			if !ok {
				return 0, 0, 0, false
			}
			if iv, ok := interval(c, results.FigBatchMS); ok {
				return iv.Median * 1e3, iv.Lo * 1e3, iv.Hi * 1e3, true
			}
			return m * 1e3, (m - c.BatchMS.Stddev) * 1e3, (m + c.BatchMS.Stddev) * 1e3, true
		}},
	}
	if r.Settings.Repeat > 1 {
		defs[0].title += " (error bars: interval over repeats)"
		defs[2].title += " (error bars: interval over repeats)"
	}
	for _, d := range defs {
		f := &chart.Figure{Title: d.title}
		for _, fam := range fams {
			if p := barPanel(fam, d.ylabel, d.k, d.value); p != nil {
				f.Panels = append(f.Panels, p)
			}
		}
		if len(f.Panels) > 0 {
			out = append(out, f)
		}
	}
	if f := speedupFigure(r); f != nil {
		out = append(out, f)
	}
	if f := capacityFigure(r); f != nil {
		out = append(out, f)
	}
	return out
}

// A family is one scenario (at one open-loop rate): the groups its bar
// panel puts side by side as categories.
type family struct {
	title  string
	groups []*group
	labels []string // category labels
	protos []api.Protocol
}

func families(groups []*group) []*family {
	var out []*family
	byKey := map[string]*family{}
	dims := varyingDims(groups)
	for _, g := range groups {
		key := fmt.Sprintf("%s/%g", g.Scenario, g.RateRequested)
		f := byKey[key]
		if f == nil {
			title := g.Scenario.Title()
			if g.RateRequested > 0 {
				title += " @ " + format.Rate(g.RateRequested) + "/s"
			}
			f = &family{title: title}
			byKey[key] = f
			out = append(out, f)
		}
		label := varying(dims, g)
		f.groups = append(f.groups, g)
		f.labels = append(f.labels, label)
	}
	for _, f := range out {
		var cells []*results.Cell
		for _, g := range f.groups {
			cells = append(cells, g.Cells...)
		}
		f.protos = protocols(cells)
	}
	return out
}

// barPanel is one family as grouped bars: its groups as categories, one
// bar per protocol, scaled to one unit; nil when no cell has the value.
func barPanel(f *family, ylabel string, k format.Kind, value barValue) *chart.BarPanel {
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
	u := format.Unit{Div: 1}
	switch k {
	case format.KindUS:
		u = format.USUnit(top)
	case format.KindBytes:
		u = format.BytesUnit(top)
	}
	label := ylabel
	if u.Name != "" {
		label += " (" + u.Name + ")"
	}
	p := &chart.BarPanel{Title: f.title, YLabel: label, Categories: f.labels, Tick: format.Tick}
	for _, proto := range f.protos {
		s := chart.BarSeries{Name: string(proto), Color: protoColor(proto)}
		for j, g := range f.groups {
			c := g.cell(proto)
			if c == nil {
				continue // not measured: no bar at all
			}
			v, lo, hi, ok := value(c)
			if !ok {
				s.Bars = append(s.Bars, chart.Bar{Category: j, Label: "n/a", NA: true})
				continue
			}
			s.Bars = append(s.Bars, chart.Bar{Category: j, Value: v / u.Div, Lo: lo / u.Div, Hi: hi / u.Div, Label: u.Num(v)})
		}
		p.Series = append(p.Series, s)
	}
	return p
}

// dashboard is the svg and png image: a header, the summary, every figure.
func dashboard(r *results.Result) *chart.Dashboard {
	e := &r.Env
	d := &chart.Dashboard{Title: "meteorbench: REST vs gRPC, side by side", Empty: "no cells were measured", Figures: figures(r)}
	if len(r.Cells) == 0 && len(r.Capacity) > 0 {
		d.Empty = "no capacity probe ran"
	}
	if r.Interrupted {
		d.Banner = interruptedBanner
	}
	d.Lines = []string{
		fmt.Sprintf("meteorbench %s · %s (GOEXPERIMENT=%s) · grpc %s · protobuf %s",
			e.MeteorbenchVersion, e.GoVersion, goExperiment(e), e.GRPCVersion, e.ProtobufVersion),
		fmt.Sprintf("%s · %s, GOMAXPROCS=%d · %s %s · %s",
			orNA(e.CPUModel), plural(e.NumCPU, "CPU", "CPUs"), e.GOMAXPROCS, e.OS, e.Arch, r.Started.UTC().Format("2006-01-02 15:04 MST")),
		loadLine(&r.Settings),
	}
	if r.Settings.Repeat > 1 {
		d.Lines = append(d.Lines, "repeats: "+repeatLine(r))
	}
	for _, s := range summary(r) {
		d.Summary = append(d.Summary, s.Text) // the notes would widen the image; the text formats have them
	}
	return d
}

func writeSVG(ctx context.Context, w io.Writer, r *results.Result) error {
	return dashboard(r).WriteSVG(ctx, w)
}

func writePNG(ctx context.Context, w io.Writer, r *results.Result) error {
	return dashboard(r).WritePNG(ctx, w)
}

// shortParts names a group's batch and condition features briefly, by
// dimension: what tells its bars apart from other groups'.
func shortParts(g *group) [][2]string {
	parts := [][2]string{{"batch", fmt.Sprintf("b%d", g.Batch)}}
	for _, f := range g.Condition.Short() {
		parts = append(parts, [2]string{f.Dim, f.Short})
	}
	return parts
}

// varyingDims are the dimensions whose values differ across groups: what
// varying names. Computed once for all groups (once per group made a
// document of 12,000 groups take minutes to chart).
func varyingDims(groups []*group) map[string]bool {
	values := map[string]map[string]bool{}
	for _, o := range groups {
		for _, p := range shortParts(o) {
			if values[p[0]] == nil {
				values[p[0]] = map[string]bool{}
			}
			values[p[0]][p[1]] = true
		}
	}
	dims := map[string]bool{}
	for d, vs := range values {
		dims[d] = len(vs) > 1
	}
	return dims
}

// varying labels a group by the features that vary across the run's
// groups (dims, from varyingDims): "b100 c8 · 100mbit/20ms · 10 records";
// "batch N" when none do.
func varying(dims map[string]bool, g *group) string {
	var out []string
	for _, p := range shortParts(g) {
		if dims[p[0]] && p[1] != "" {
			out = append(out, p[1])
		}
	}
	if len(out) == 0 {
		return fmt.Sprintf("batch %d", g.Batch)
	}
	return strings.Join(out, " · ")
}
