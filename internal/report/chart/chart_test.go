package chart

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
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
	if err := sample().WriteSVG(context.Background(), &a); err != nil {
		t.Fatal(err)
	}
	if err := sample().WriteSVG(context.Background(), &b); err != nil {
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
	if err := d.WritePNG(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&buf); err != nil {
		t.Errorf("invalid PNG: %v", err)
	}
	svg, err := FigureSVG(context.Background(), d.Figures[1], 2)
	if err != nil || !bytes.Contains(svg, []byte(">bars<")) || bytes.Contains(svg, []byte(">a title<")) {
		t.Errorf("FigureSVG: %v\n%.300s", err, svg)
	}
	empty := &Dashboard{Title: "t", Empty: "nothing measured"}
	buf.Reset()
	if err := empty.WriteSVG(context.Background(), &buf); err != nil || !strings.Contains(buf.String(), ">nothing measured<") {
		t.Errorf("empty dashboard: %v", err)
	}
}

// Any finite value draws in bounded time: a denormal latency once made the
// log axis' tick loop endless (its range reached 0, log10 -Inf), and a value
// scaled to 0 or near the float64 maximum must not either.
func TestExtremeValuesDraw(t *testing.T) {
	for _, vs := range [][]float64{
		{1e-323, 400},
		{5e-324, 5e-324},
		{0, 2}, // a point scaled to nothing beside a real one
		{1e300, math.MaxFloat64},
		{1, math.MaxFloat64},
	} {
		d := &Dashboard{Title: "t", Figures: []*Figure{
			{Title: "lat", Panels: []Panel{&LatencyPanel{Title: "l", Lines: []Line{
				{Name: "a", Color: blue, Points: []Point{{0.5, vs[0]}, {0.9, vs[1]}}},
			}}}},
			{Title: "series", Panels: []Panel{&SeriesPanel{Title: "s", Ref: vs[0], Marks: []Mark{{Name: "m", Color: blue, X: vs[1]}},
				Series: []Series{{Name: "a", Color: blue, Points: []XY{{vs[0], vs[1]}, {vs[1], vs[0]}}}}}}},
			{Title: "bars", Panels: []Panel{&BarPanel{Title: "b", Categories: []string{"x"},
				Series: []BarSeries{{Name: "a", Color: blue, Bars: []Bar{{Category: 0, Value: vs[1], Lo: vs[0], Hi: vs[1], Label: "v"}}}}}}},
		}}
		done := make(chan error, 1)
		go func() { done <- d.WriteSVG(context.Background(), io.Discard) }()
		select {
		case <-done: // an error is fine (gonum refuses some ranges); hanging is not
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: drawing did not end", vs)
		}
	}
	for _, r := range [][2]float64{{0, 1e3}, {5e-324, 1e3}, {1, math.Inf(1)}, {math.NaN(), 1}, {3, 3}} {
		if n := len((logTicks{format: tickFormat(nil)}).Ticks(r[0], r[1])); n > 9*(maxDecades+2) {
			t.Errorf("ticks of %v: %d, want a bounded number", r, n)
		}
	}
}

// barSVG draws one bar panel alone.
func barSVG(t *testing.T, bp *BarPanel) string {
	t.Helper()
	b, err := FigureSVG(context.Background(), &Figure{Title: "f", Panels: []Panel{bp}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Value labels wider than their bars stand upright instead of running into
// each other ("318321337"); narrow ones stay level. Category labels too
// wide for their slot break at " · " into lines.
func TestBarLabelsDoNotOverlap(t *testing.T) {
	var cats []string
	var bars [3][]Bar
	for i := range 6 {
		cats = append(cats, fmt.Sprintf("100mbit/20ms · %d records", 10*(i+1)))
		for s := range 3 {
			bars[s] = append(bars[s], Bar{Category: i, Value: 300000 + float64(i), Label: fmt.Sprintf("3%05d", 11111*s+i)})
		}
	}
	wide := &BarPanel{Title: "wide", Categories: cats, Series: []BarSeries{
		{Name: "a", Color: blue, Bars: bars[0]}, {Name: "b", Color: blue, Bars: bars[1]}, {Name: "c", Color: blue, Bars: bars[2]}}}
	svg := barSVG(t, wide)
	if !regexp.MustCompile(`>300000<`).MatchString(svg) {
		t.Fatalf("no value label:\n%.2000s", svg)
	}
	if n := strings.Count(svg, "rotate(90)"); n < 18 {
		t.Errorf("%d upright labels, want the 18 value labels upright", n)
	}
	if strings.Contains(svg, ">100mbit/20ms · 10 records<") || !strings.Contains(svg, ">10 records<") {
		t.Error("category labels not broken into lines")
	}
	narrow := &BarPanel{Title: "narrow", Categories: []string{"x"}, Series: []BarSeries{{Name: "a", Color: blue, Bars: []Bar{{Category: 0, Value: 5, Label: "5"}}}}}
	if strings.Contains(barSVG(t, narrow), "rotate(90)") {
		t.Error("a label that fits was turned upright")
	}
}
