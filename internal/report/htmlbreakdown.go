package report

import (
	"fmt"
	"html/template"

	"github.com/meteorbench/meteorbench/internal/cpubreakdown"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// The html format's "Where the CPU goes" section (run --profile): per
// section of the results, per side, one stacked bar per protocol, its
// length the profiled CPU per call (against the section's longest), each
// category a segment of its share.

type htmlBreakdown struct {
	Title string
	Sides []htmlBreakdownSide
}

type htmlBreakdownSide struct {
	Name string // "server", "client"
	Bars []htmlBar
}

type htmlBar struct {
	Proto    string
	Segments []htmlSegment
	Text     string // "2.11 ms/call, 812 samples", or why unknown
}

type htmlSegment struct {
	Style template.CSS // width and colour
	Title string       // the tooltip: "encoding 61%, 1.29 ms/call"
}

// categoryColours are the categories' colours, in cpubreakdown.Categories
// order.
var categoryColours = []string{"#0072B2", "#56B4E9", "#E69F00", "#D55E00", "#009E73", "#CC79A7", "#F0E442", "#999999", "#882255", "#44AA99", "#DDDDDD"}

// htmlLegend is the categories with their colours.
func htmlLegend() []htmlSegment {
	out := make([]htmlSegment, len(cpubreakdown.Categories))
	for i, c := range cpubreakdown.Categories {
		out[i] = htmlSegment{Style: template.CSS("background:" + categoryColours[i]), Title: c.Label()}
	}
	return out
}

// htmlBreakdowns are the bars of every section with a profiled cell.
func htmlBreakdowns(groups []*group) []htmlBreakdown {
	var out []htmlBreakdown
	for _, g := range groups {
		hb := htmlBreakdown{Title: g.title()}
		for _, side := range []struct {
			name string
			get  func(c *results.Cell) *results.CPUBreakdown
		}{
			{"server", func(c *results.Cell) *results.CPUBreakdown { return c.ServerCPUBreakdown }},
			{"client", func(c *results.Cell) *results.CPUBreakdown { return c.ClientCPUBreakdown }},
		} {
			longest := 0.0
			for _, c := range g.Cells {
				if b := side.get(c); b.Known() {
					longest = max(longest, b.USPerCall())
				}
			}
			var s htmlBreakdownSide
			s.Name = side.name
			for _, c := range g.Cells {
				b := side.get(c)
				if b == nil {
					continue
				}
				bar := htmlBar{Proto: string(c.Protocol)}
				if !b.Known() {
					bar.Text = "unknown: " + b.Unknown
					s.Bars = append(s.Bars, bar)
					continue
				}
				scale := 1.0
				if longest > 0 {
					scale = b.USPerCall() / longest
				}
				for i, cat := range cpubreakdown.Categories {
					sh, ok := b.Categories[string(cat)]
					if !ok || sh.Share <= 0 {
						continue
					}
					bar.Segments = append(bar.Segments, htmlSegment{
						Style: template.CSS(fmt.Sprintf("width:%.2f%%;background:%s", 100*sh.Share*scale, categoryColours[i])),
						Title: fmt.Sprintf("%s %s, %s/call", cat.Label(), format.Percent(sh.Share), format.US(sh.USPerCall)),
					})
				}
				bar.Text = fmt.Sprintf("%s/call, %s samples: %s", format.US(b.USPerCall()), format.Count(b.Samples), cpubreakdown.Summary(b, 0.1))
				if b.Coverage != nil {
					bar.Text += fmt.Sprintf(" (the profile saw %s of the counted CPU; the µs are the shares of the counters')", format.Percent(*b.Coverage))
				}
				s.Bars = append(s.Bars, bar)
			}
			if len(s.Bars) > 0 {
				hb.Sides = append(hb.Sides, s)
			}
		}
		if len(hb.Sides) > 0 {
			out = append(out, hb)
		}
	}
	return out
}
