// Package chart draws meteorbench's charts with gonum.org/v1/plot from
// plain series: names, colours, points and intervals already scaled to the
// unit they are shown in, and labels already formatted. It knows nothing of
// result documents; package report maps cells to series and calls it.
//
// A Figure is one chart: a title and a grid of panels. A Dashboard draws a
// header and every figure into one image (SVG or PNG); FigureSVG draws one
// figure on its own, for inlining in HTML.
//
// Fonts: text is laid out with Liberation Sans metrics and the SVG names
// "Liberation Sans, Arial, Helvetica, sans-serif": Arial has the same
// metrics, so labels fit without embedding a font in the file.
package chart

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"io"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

const (
	panelW       = 300 * vg.Inch / 72 // 300pt
	panelH       = 225 * vg.Inch / 72
	figTitleH    = 26 * vg.Inch / 72
	headerLineH  = 16 * vg.Inch / 72
	panelPad     = 8 * vg.Inch / 72
	dashboardCol = 4
	pngDPI       = 96
)

var (
	sans     = font.Font{Typeface: "Liberation", Variant: "Sans"}
	sansBold = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: xfont.WeightBold}
	gray     = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
	red      = color.RGBA{R: 0xc0, G: 0x1c, B: 0x28, A: 0xff}
)

// A Panel is one plot of a figure: a *LatencyPanel, a *BarPanel or a
// *SeriesPanel.
type Panel interface {
	plot() *plot.Plot
}

// A Figure is one chart: a title and its panels, laid out in a grid.
type Figure struct {
	Title  string
	Panels []Panel
}

// size is the figure's size laid out in cols columns.
func (f *Figure) size(cols int) (w, h vg.Length) {
	cols = min(cols, len(f.Panels))
	rows := (len(f.Panels) + cols - 1) / cols
	return vg.Length(cols) * panelW, figTitleH + vg.Length(rows)*panelH
}

// draw lays the figure out in cols columns, its top-left corner at top. It
// stops with ctx's cause when ctx is cancelled, checked before each panel.
func (f *Figure) draw(ctx context.Context, c draw.Canvas, top vg.Point, cols int) error {
	cols = min(cols, len(f.Panels))
	st := textStyle(sansBold, 12, color.Black)
	st.YAlign = draw.YTop
	c.FillText(st, vg.Point{X: top.X + panelPad, Y: top.Y - 6}, f.Title)
	y0 := top.Y - figTitleH
	for i, panel := range f.Panels {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		p := panel.plot()
		col, row := i%cols, i/cols
		min := vg.Point{X: top.X + vg.Length(col)*panelW + panelPad, Y: y0 - vg.Length(row+1)*panelH + panelPad}
		max := vg.Point{X: top.X + vg.Length(col+1)*panelW - panelPad, Y: y0 - vg.Length(row)*panelH - panelPad}
		p.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{Min: min, Max: max}})
	}
	return nil
}

// A Dashboard is every figure in one image, under a header.
type Dashboard struct {
	Title  string   // bold, first line
	Banner string   // in red under the title when not ""
	Lines  []string // grey lines: environment, settings
	// Summary lines are printed in black under Lines: what the charts show.
	Summary []string
	Figures []*Figure
	// Empty is printed when there is no figure ("no cells were measured").
	Empty string
}

type headerLine struct {
	text  string
	style text.Style
}

func (d *Dashboard) header() []headerLine {
	var out []headerLine
	add := func(s string, st text.Style) {
		st.YAlign = draw.YTop
		out = append(out, headerLine{s, st})
	}
	add(d.Title, textStyle(sansBold, 14, color.Black))
	if d.Banner != "" {
		add(d.Banner, textStyle(sansBold, 12, red))
	}
	for _, l := range d.Lines {
		add(l, textStyle(sans, 10, gray))
	}
	for _, l := range d.Summary {
		add(l, textStyle(sans, 10, color.Black))
	}
	return out
}

// render draws the dashboard on one canvas made by newCanvas.
func (d *Dashboard) render(ctx context.Context, newCanvas func(w, h vg.Length) vg.CanvasWriterTo) (vg.CanvasWriterTo, error) {
	header := d.header()
	w := 2 * panelW
	h := vg.Length(len(header))*headerLineH + 10
	for _, l := range header {
		w = max(w, l.style.Rectangle(l.text).Max.X+2*panelPad)
	}
	for _, f := range d.Figures {
		fw, fh := f.size(dashboardCol)
		w, h = max(w, fw), h+fh
	}
	if len(d.Figures) == 0 {
		h += headerLineH
	}
	cv := newCanvas(w, h)
	c := draw.New(cv)
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	y := h - 6
	for _, l := range header {
		c.FillText(l.style, vg.Point{X: panelPad, Y: y}, l.text)
		y -= headerLineH
	}
	if len(d.Figures) == 0 {
		st := textStyle(sans, 10, color.Black)
		st.YAlign = draw.YTop
		c.FillText(st, vg.Point{X: panelPad, Y: y}, d.Empty)
	}
	y -= 10
	for _, f := range d.Figures {
		if err := f.draw(ctx, c, vg.Point{X: 0, Y: y}, dashboardCol); err != nil {
			return nil, err
		}
		_, fh := f.size(dashboardCol)
		y -= fh
	}
	return cv, nil
}

// WriteSVG draws the dashboard as SVG: same dashboard, same bytes.
// Cancelling ctx stops the drawing between panels.
func (d *Dashboard) WriteSVG(ctx context.Context, w io.Writer) (err error) {
	defer recoverPlot(&err)
	cv, err := d.render(ctx, func(w, h vg.Length) vg.CanvasWriterTo { return vgsvg.New(w, h) })
	if err != nil {
		return err
	}
	b, err := finishSVG(cv)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// WritePNG draws the dashboard as a PNG at 96 dpi. Cancelling ctx stops
// the drawing between panels.
func (d *Dashboard) WritePNG(ctx context.Context, w io.Writer) (err error) {
	defer recoverPlot(&err)
	cv, err := d.render(ctx, func(w, h vg.Length) vg.CanvasWriterTo {
		return vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(pngDPI))}
	})
	if err != nil {
		return err
	}
	_, err = cv.WriteTo(w)
	return err
}

// FigureSVG draws one figure as a standalone SVG, cols panels wide.
// Cancelling ctx stops the drawing between panels.
func FigureSVG(ctx context.Context, f *Figure, cols int) (b []byte, err error) {
	defer recoverPlot(&err)
	w, h := f.size(cols)
	cv := vgsvg.New(w, h)
	c := draw.New(cv)
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	if err := f.draw(ctx, c, vg.Point{X: 0, Y: h}, cols); err != nil {
		return nil, err
	}
	return finishSVG(cv)
}

// svgFonts makes the SVG name fonts a browser has: Arial shares Liberation
// Sans's metrics.
var svgFonts = strings.NewReplacer(
	"font-family:Liberation Sans;", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;",
)

func finishSVG(cv vg.CanvasWriterTo) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := cv.WriteTo(&buf); err != nil {
		return nil, err
	}
	return []byte(svgFonts.Replace(buf.String())), nil
}

// recoverPlot turns a gonum/plot panic (it panics on impossible ranges)
// into an error: a bad document must not crash the command.
func recoverPlot(err *error) {
	if v := recover(); v != nil {
		*err = fmt.Errorf("drawing charts: %v", v)
	}
}

func textStyle(f font.Font, size vg.Length, c color.Color) text.Style {
	return text.Style{Color: c, Font: font.From(f, size), Handler: plot.DefaultTextHandler}
}
