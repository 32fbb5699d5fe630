package chart

import (
	"bytes"
	"image/color"
	"image/png"
	"strings"
	"testing"
)

var blue = color.RGBA{B: 0xff, A: 0xff}

func sample() *Dashboard {
	lo, hi := 90.0, 110.0
	return &Dashboard{
		Title:   "a title",
		Banner:  "a banner",
		Lines:   []string{"an environment line"},
		Summary: []string{"a summary line"},
		Figures: []*Figure{
			{Title: "Latency", Panels: []Panel{&LatencyPanel{Title: "lat", YLabel: "latency (ms)", Lines: []Line{
				{Name: "one", Color: blue, Points: []Point{{0.5, 1}, {0.9, 2}, {0.99, 4}}},
				{Name: "one (dashed)", Color: blue, Dashed: true, Points: []Point{{0.5, 1.1}, {0.99, 3}}},
				{Name: "too short", Color: blue, Points: []Point{{0.5, 1}}},
			}}}},
			{Title: "Bars", Panels: []Panel{&BarPanel{Title: "bars", YLabel: "calls/s", Categories: []string{"batch 100", "batch 200"},
				Series: []BarSeries{
					{Name: "one", Color: blue, Bars: []Bar{{Category: 0, Value: 100, Lo: lo, Hi: hi, Label: "100 ±"}, {Category: 1, NA: true, Label: "n/a"}}},
					{Name: "never", Color: blue},
				}}}},
		},
	}
}

// Plain series in, an SVG with their names, labels and header out, the
// same bytes every time.
func TestDashboardSVG(t *testing.T) {
	var a, b bytes.Buffer
	if err := sample().WriteSVG(&a); err != nil {
		t.Fatal(err)
	}
	if err := sample().WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("SVG not deterministic")
	}
	out := a.String()
	for _, want := range []string{">a title<", ">a banner<", ">an environment line<", ">a summary line<", ">Latency<", ">Bars<",
		">one<", ">one (dashed)<", ">100 ±<", ">n/a<", ">batch 200<", ">latency (ms)<", ">50%<", "Arial"} {
		if !strings.Contains(out, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	// A line of one point and a series without bars draw nothing and get
	// no legend entry.
	for _, absent := range []string{">too short<", ">never<"} {
		if strings.Contains(out, absent) {
			t.Errorf("SVG has %q", absent)
		}
	}
}

func TestDashboardPNGAndFigure(t *testing.T) {
	var buf bytes.Buffer
	d := sample()
	if err := d.WritePNG(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&buf); err != nil {
		t.Errorf("invalid PNG: %v", err)
	}
	svg, err := FigureSVG(d.Figures[1], 2)
	if err != nil || !bytes.Contains(svg, []byte(">bars<")) || bytes.Contains(svg, []byte(">a title<")) {
		t.Errorf("FigureSVG: %v\n%.300s", err, svg)
	}
	empty := &Dashboard{Title: "t", Empty: "nothing measured"}
	buf.Reset()
	if err := empty.WriteSVG(&buf); err != nil || !strings.Contains(buf.String(), ">nothing measured<") {
		t.Errorf("empty dashboard: %v", err)
	}
}
