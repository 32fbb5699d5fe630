package report

import (
	"bytes"
	"encoding/xml"
	"image"
	"image/color"
	"image/png"
	"io"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/report/chart"
	"github.com/meteorbench/meteorbench/internal/results"
)

// svgDoc is what the tests read from an SVG: the text of every <text> and
// the style of every <path>.
type svgDoc struct {
	texts  []string
	styles []string
	root   string
	svgs   int
}

func parseSVG(t *testing.T, b []byte) svgDoc {
	t.Helper()
	var d svgDoc
	dec := xml.NewDecoder(bytes.NewReader(b))
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("invalid SVG (XML): %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if d.root == "" {
				d.root = e.Name.Local
			}
			switch e.Name.Local {
			case "svg":
				d.svgs++
			case "text":
				inText = true
				d.texts = append(d.texts, "")
			case "path":
				for _, a := range e.Attr {
					if a.Name.Local == "style" {
						d.styles = append(d.styles, a.Value)
					}
				}
			}
		case xml.EndElement:
			if e.Name.Local == "text" {
				inText = false
			}
		case xml.CharData:
			if inText {
				d.texts[len(d.texts)-1] += string(e)
			}
		}
	}
	return d
}

func (d svgDoc) hasText(s string) bool {
	for _, t := range d.texts {
		if t == s {
			return true
		}
	}
	return false
}

func (d svgDoc) countStyle(s string) int {
	n := 0
	for _, st := range d.styles {
		if strings.Contains(st, s) {
			n++
		}
	}
	return n
}

// latencyLine and barFill are how a protocol's series look in the SVG.
func latencyLine(proto api.Protocol) string {
	return "stroke:" + colorHex(protoColor(proto)) + ";stroke-width:1.5"
}

func barFill(proto api.Protocol) string { return "fill:" + colorHex(protoColor(proto)) }

func colorHex(c color.Color) string {
	r, g, b, _ := c.RGBA()
	const hex = "0123456789ABCDEF"
	out := []byte{'#'}
	for _, v := range []uint32{r >> 8, g >> 8, b >> 8} {
		out = append(out, hex[v>>4], hex[v&15])
	}
	return string(out)
}

func TestSVG(t *testing.T) {
	for _, name := range reportFixtures {
		t.Run(name, func(t *testing.T) {
			r := loadFixture(t, name)
			b := render(t, "svg", r)
			d := parseSVG(t, b)
			if d.root != "svg" {
				t.Fatalf("root element %q", d.root)
			}
			groups := groupCells(r)
			protos := protocols(cellPtrs(r))
			fams := families(groups)
			all := "\n" + strings.Join(d.texts, "\n")
			open := r.Settings.Mode == results.ModeOpen
			for _, want := range []string{"meteorbench: REST vs gRPC, side by side", "Latency by percentile", "Throughput",
				"Bytes on the wire per call", "Server CPU per call", "Time per batch", "percentile"} {
				if has := strings.Contains(all, "\n"+want); !has && !(open && want == "Time per batch") {
					t.Errorf("no text starting %q", want)
				} else if has && open && want == "Time per batch" {
					t.Error("open loop: a time-per-batch chart")
				}
			}
			// The summary heads the image.
			for _, v := range r.Verdicts {
				if !strings.Contains(all, "\n"+v.Summary) {
					t.Errorf("no summary line %q", v.Summary)
				}
			}
			barFigures := 4
			if open {
				barFigures = 3
			}
			for _, p := range protos {
				if !d.hasText(string(p)) {
					t.Errorf("no legend entry %q", p)
				}
				// Each latency panel has the protocol's line and its legend
				// thumbnail; the open-loop fixture adds the dashed uncorrected
				// line and its thumbnail.
				perPanel := 0
				for _, g := range groups {
					if c := g.cell(p); c != nil && c.Calls > 0 {
						perPanel += 2
						if c.LatencyUncorrectedUS != nil {
							perPanel += 2
						}
					}
				}
				// The speed-up panel (a --records sweep) draws the same
				// line style: one line and its legend entry per scenario.
				if f := speedupFigure(r); f != nil {
					for _, s := range f.Panels[0].(*chart.SeriesPanel).Series {
						if strings.HasSuffix(s.Name, " "+string(p)) {
							perPanel += 2
						}
					}
				}
				if got := d.countStyle(latencyLine(p)); got != perPanel {
					t.Errorf("%s: %d latency paths, want %d", p, got, perPanel)
				}
				// Bars: four bar figures, one bar per measured cell of the
				// protocol plus one legend swatch per panel that shows it.
				// (The interrupted fixture has one cell whose server CPU is
				// unknown: no bar, an "n/a" label.)
				bars := 0
				for _, f := range fams {
					n := 0
					for _, g := range f.groups {
						if g.cell(p) != nil {
							n++
						}
					}
					if n > 0 {
						bars += barFigures * (n + 1)
					}
				}
				for i := range r.Cells {
					if r.Cells[i].Protocol == p && r.Cells[i].ServerCPUUSPerCall == nil {
						bars--
					}
				}
				// A --records sweep spans four decades on the bars' linear
				// axis: its smallest bars round to nothing and are not drawn.
				if got := d.countStyle(barFill(p)); got != bars && !(len(r.Settings.Records) > 0 && got <= bars && got >= bars-4) {
					t.Errorf("%s: %d filled bars and swatches, want %d", p, got, bars)
				}
			}
			for _, g := range groups {
				if !d.hasText(g.chartTitle()) {
					t.Errorf("no latency panel titled %q", g.chartTitle())
				}
			}
			if r.Interrupted && !d.hasText(interruptedBanner) {
				t.Error("interrupted run: no banner")
			}
			// Same input, same bytes.
			if again := render(t, "svg", r); !bytes.Equal(b, again) {
				t.Error("SVG output is not deterministic")
			}
			if bytes.Contains(b, []byte("font-family:Liberation Sans;")) {
				t.Error("SVG names only Liberation Sans: want the Arial fallback")
			}
		})
	}
}

func cellPtrs(r *results.Result) []*results.Cell {
	out := make([]*results.Cell, len(r.Cells))
	for i := range r.Cells {
		out[i] = &r.Cells[i]
	}
	return out
}

func TestSVGGolden(t *testing.T) {
	golden(t, "openloop.svg", render(t, "svg", loadFixture(t, "openloop")))
}

func TestPNG(t *testing.T) {
	// One small fixture: rasterising is slow under -race.
	for _, name := range []string{"openloop"} {
		t.Run(name, func(t *testing.T) {
			r := loadFixture(t, name)
			img, err := png.Decode(bytes.NewReader(render(t, "png", r)))
			if err != nil {
				t.Fatalf("invalid PNG: %v", err)
			}
			b := img.Bounds()
			// At least two 300pt panels wide at 96 dpi, and taller than a
			// header: five figures.
			if b.Dx() < 800 || b.Dx() > 4000 || b.Dy() < 1000 || b.Dy() > 8000 {
				t.Errorf("PNG is %dx%d", b.Dx(), b.Dy())
			}
			for _, p := range protocols(cellPtrs(r)) {
				if n := countColor(img, protoColor(p)); n < 1000 {
					t.Errorf("%s: only %d pixels of its colour: bars not drawn?", p, n)
				}
			}
		})
	}
}

func countColor(img image.Image, c color.Color) int {
	wr, wg, wb, _ := c.RGBA()
	n := 0
	if rgba, ok := img.(*image.RGBA); ok { // the fast path: what png.Decode gives here
		for i := 0; i+3 < len(rgba.Pix); i += 4 {
			if uint32(rgba.Pix[i]) == wr>>8 && uint32(rgba.Pix[i+1]) == wg>>8 && uint32(rgba.Pix[i+2]) == wb>>8 {
				n++
			}
		}
		return n
	}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bb, _ := img.At(x, y).RGBA()
			if r>>8 == wr>>8 && g>>8 == wg>>8 && bb>>8 == wb>>8 {
				n++
			}
		}
	}
	return n
}

var svgElement = regexp.MustCompile(`(?s)<svg.*?</svg>`)

func TestHTML(t *testing.T) {
	for _, name := range reportFixtures {
		t.Run(name, func(t *testing.T) {
			r := loadFixture(t, name)
			out := render(t, "html", r)
			doc, err := html.Parse(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			counts := map[string]int{}
			var tables []string
			var walk func(n *html.Node)
			walk = func(n *html.Node) {
				if n.Type == html.ElementNode {
					counts[n.Data]++
					for _, a := range n.Attr {
						if (a.Key == "src" || a.Key == "href") && a.Val != "" {
							t.Errorf("<%s %s=%q>: the page must not load anything", n.Data, a.Key, a.Val)
						}
						if n.Data == "table" && a.Key == "class" {
							tables = append(tables, a.Val)
						}
					}
				}
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					walk(c)
				}
			}
			walk(doc)
			for _, tag := range []string{"script", "link", "img", "iframe", "object"} {
				if counts[tag] > 0 {
					t.Errorf("%d <%s>: want a self-contained page", counts[tag], tag)
				}
			}
			// (An error message may quote a URL as text; nothing may load one.)
			if bytes.Contains(out, []byte(`="http`)) || bytes.Contains(out, []byte("url(")) {
				t.Error("the page refers to an http(s) URL")
			}
			figs := figures(r)
			if counts["svg"] != len(figs) || len(figs) < 4 {
				t.Errorf("%d inline <svg>, %d figures", counts["svg"], len(figs))
			}
			// Every inline SVG is well-formed XML on its own.
			for _, s := range svgElement.FindAll(out, -1) {
				parseSVG(t, s)
			}
			cells := 0
			for _, c := range tables {
				if c == "cells" {
					cells++
				}
			}
			if want := len(groupCells(r)); cells != want {
				t.Errorf("%d result tables, want one per group (%d)", cells, want)
			}
			for _, want := range []string{r.Env.GoVersion, "GOMAXPROCS=2", r.Env.CPUModel, "latency p99"} {
				if !bytes.Contains(out, []byte(want)) {
					t.Errorf("page lacks %q", want)
				}
			}
			if r.Interrupted != bytes.Contains(out, []byte("INTERRUPTED — partial results")) {
				t.Errorf("interrupted=%v but banner presence differs", r.Interrupted)
			}
		})
	}
}

// A document whose cells have no distribution, no calls or odd values
// still renders every format (gonum/plot panics become errors, never a
// crash).
func TestChartsDegenerate(t *testing.T) {
	r := loadFixture(t, "openloop")
	r.Cells = r.Cells[:2]
	r.Cells[0].Distribution = nil               // falls back to the percentiles
	r.Cells[1].Calls, r.Cells[1].Errors = 0, 10 // all failed
	r.Cells[1].ErrorClasses = results.ErrorCounts{"unavailable": 10}
	for _, f := range []string{"svg", "html"} { // png draws the same canvas, more slowly
		render(t, f, r)
	}
	empty := &results.Result{Schema: results.Schema}
	for _, f := range Formats {
		var buf bytes.Buffer
		if err := Write(&buf, f, empty); err != nil {
			t.Errorf("%s of an empty result: %v", f, err)
		}
	}
}

// A --records sweep gets the speed-up panel: one line per protocol other
// than REST per scenario, and the 1x reference; the page lists the
// crossover lines in the summary.
func TestSpeedupChart(t *testing.T) {
	r := loadFixture(t, "records")
	d := parseSVG(t, render(t, "svg", r))
	for _, s := range []string{"p50 speed-up over REST", "records per call (log)", "1x (as fast as REST)",
		"large grpc", "large rest-protobuf", "post grpc", "post rest-protobuf"} {
		if !d.hasText(s) {
			t.Errorf("svg has no text %q", s)
		}
	}
	if d.hasText("large rest") || d.hasText("small grpc") {
		t.Errorf("svg has a REST-over-REST or a small line")
	}
	page := strings.ReplaceAll(string(render(t, "html", r)), "&#43;", "+") // html/template escapes "+"
	for _, l := range analysisLines(r) {
		if !strings.Contains(page, `<li class="crossover">`+html.EscapeString(l)+`</li>`) {
			t.Errorf("html lacks crossover line %q", l)
		}
	}
	// Without a sweep, no panel.
	if d := parseSVG(t, render(t, "svg", loadFixture(t, "openloop"))); d.hasText("p50 speed-up over REST") {
		t.Errorf("speed-up panel without a --records sweep")
	}
}

func analysisLines(r *results.Result) []string {
	if len(r.Crossovers) == 0 {
		return []string{"(none)"}
	}
	return crossoverLines(r)
}
