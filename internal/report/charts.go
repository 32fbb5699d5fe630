package report

import (
	"context"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot/vg"

	"github.com/meteorbench/meteorbench/api"

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
		k             kind
		value         barValue
	}
	defs := []barDef{
		{"Throughput", "calls/s", kindRate, ci(results.FigCallsPerS)},
		{"Bytes on the wire per call (sent + received)", "bytes/call", kindBytes, func(c *results.Cell) (float64, float64, float64, bool) {
			s, ok1 := c.Figure(results.FigBytesSent)
			r, ok2 := c.Figure(results.FigBytesReceived)
			return s + r, s + r, s + r, ok1 && ok2
		}},
		{"Server CPU per call", "server CPU/call", kindUS, ci(results.FigServerCPU)},
		{"Time per batch (error bars: ± stddev, or the interval over repeats)", "time/batch", kindUS, func(c *results.Cell) (float64, float64, float64, bool) {
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
	if f := fitFigure(r); f != nil { // fitchart.go
		out = append(out, f)
	}
	return out
}

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
			XTick: tickNum, YTick: tickNum,
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
				name := string(c.Protocol) + " found " + fmtRate(c.Rate) + "/s"
				if c.GeneratorBound > 0 {
					name = string(c.Protocol) + " ≥ " + fmtRate(c.Rate) + "/s (generator-bound)"
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
		Ref: 1, RefName: "1x (as fast as REST)", XTick: tickNum,
		YTick: func(v float64) string { return tickNum(v) + "x" },
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
				title += " @ " + fmtRate(g.RateRequested) + "/s"
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
	u := durUnit(hi)
	p := &chart.LatencyPanel{Title: g.chartTitle(), YLabel: "latency (" + u.name + ")", Tick: tickNum}
	for _, c := range curves {
		for i := range c.pts {
			c.pts[i].V /= u.div
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

// barPanel is one family as grouped bars: its groups as categories, one
// bar per protocol, scaled to one unit; nil when no cell has the value.
func barPanel(f *family, ylabel string, k kind, value barValue) *chart.BarPanel {
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
	u := unit{1, ""}
	switch k {
	case kindUS:
		u = durUnit(top)
	case kindBytes:
		u = byteUnit(top)
	}
	label := ylabel
	if u.name != "" {
		label += " (" + u.name + ")"
	}
	p := &chart.BarPanel{Title: f.title, YLabel: label, Categories: f.labels, Tick: tickNum}
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
			s.Bars = append(s.Bars, chart.Bar{Category: j, Value: v / u.div, Lo: lo / u.div, Hi: hi / u.div, Label: barLabel(v, k, u)})
		}
		p.Series = append(p.Series, s)
	}
	return p
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

// tickNum formats a tick value: three significant digits, no trailing
// zeros ("50", "2.5", "25,000").
func tickNum(v float64) string {
	s := sig3(v)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
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
