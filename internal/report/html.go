package report

import (
	"context"
	"html/template"
	"io"
	"regexp"

	"github.com/meteorbench/meteorbench/internal/buildinfo"
	"github.com/meteorbench/meteorbench/internal/report/chart"
	"github.com/meteorbench/meteorbench/internal/results"
)

// htmlPage is what the html template sees.
type htmlPage struct {
	Breakdowns  []htmlBreakdown // htmlbreakdown.go
	Legend      []htmlSegment
	Title       string
	Interrupted bool
	StopReason  string
	Env         [][2]string
	Warnings    []string
	Summary     []summaryLine
	Crossovers  []string
	SummaryNote []string
	Figures     []htmlFigure
	Groups      []htmlGroup
	Capacity    []htmlCapSection
	Fit         *htmlFit
	Generator   string
}

type htmlFigure struct {
	Title string
	SVG   template.HTML
}

type htmlGroup struct {
	Title  string
	Protos []string
	Rows   []row
	Lines  []string // the verdict's ratios, under its last group
	Pooled string
	Notes  []string // error examples and warnings
}

// svgProlog matches what an inline <svg> does not need: the XML
// declaration, the generator comment and the namespace declarations
// (HTML puts <svg> in the SVG namespace by itself).
var svgProlog = regexp.MustCompile(`<\?xml[^>]*\?>\s*|<!--[^>]*-->\s*|\s+xmlns(:xlink)?="[^"]*"`)

// writeHTML renders one self-contained page: inline CSS, inline SVG
// charts, no script, no external font, image or stylesheet.
func writeHTML(ctx context.Context, w io.Writer, r *results.Result) error {
	page := htmlPage{
		Title:       "meteorbench: REST vs gRPC",
		Interrupted: r.Interrupted,
		StopReason:  orNA(r.Stop.String()),
		Env:         envLines(r),
		Warnings:    r.Warnings,
		Summary:     summary(r),
		Crossovers:  crossoverLines(r),
		SummaryNote: summaryNotes(r),
		Generator:   "meteorbench " + buildinfo.Version(),
		Capacity:    htmlCapacity(r),
		Fit:         htmlFitOf(r), // fit.go
	}
	groups := groupCells(r)
	for i, g := range groups {
		lines, note := verdictLines(r, groups, i)
		page.Groups = append(page.Groups, htmlGroup{Title: g.title(), Protos: g.protos(), Rows: cellRows(g), Lines: lines, Pooled: note, Notes: groupNotes(g)})
	}
	page.Breakdowns, page.Legend = htmlBreakdowns(groups), htmlLegend() // htmlbreakdown.go
	for _, f := range figures(r) {
		b, err := chart.FigureSVG(ctx, f, htmlCols)
		if err != nil {
			return err
		}
		// The SVG comes from our own canvas, its text escaped by vgsvg.
		page.Figures = append(page.Figures, htmlFigure{Title: f.Title, SVG: template.HTML(svgProlog.ReplaceAll(b, nil))})
	}
	return htmlTemplate.Execute(w, page)
}

var htmlTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: -apple-system, "Segoe UI", Roboto, "Liberation Sans", Arial, sans-serif; color: #1b1b1b; max-width: 62rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: .3rem; }
h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
h3 { font-size: 1.05rem; margin: 1.6rem 0 .4rem; }
.banner { background: #c01c28; color: #fff; font-weight: bold; padding: .5rem .8rem; border-radius: 4px; }
table { border-collapse: collapse; font-size: .88rem; margin: .4rem 0; }
th, td { padding: .2rem .6rem; border-bottom: 1px solid #eee; vertical-align: top; }
th { text-align: left; }
table.cells td { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
table.cells td:first-child, table.env td:first-child { text-align: left; color: #555; }
table.capacity td, table.probes td:last-child, table.probes td:nth-child(2), table.probes td:nth-child(8) { text-align: left; white-space: normal; }
table.cells thead th { text-align: right; border-bottom: 2px solid #ccc; }
th.rest { color: #D55E00; } th.rest-protobuf { color: #009E73; } th.grpc { color: #0072B2; }
.verdict { margin: .3rem 0; }
ul.summary { padding-left: 1.2rem; } ul.summary li { margin: .3rem 0; }
.note { color: #666; font-size: .8rem; margin: .1rem 0; }
.warn { color: #8a4b00; margin: .1rem 0; }
figure { margin: 1rem 0; }
figure svg { max-width: 100%; height: auto; }
code { font-size: .85rem; }
table.bars { width: 100%; } table.bars caption { text-align: left; font-weight: bold; font-size: .85rem; }
table.bars th { width: 8rem; } td.bar { width: 100%; white-space: nowrap; font-size: 0; }
td.bar span { display: inline-block; height: 1.1rem; }
.legend { font-size: .8rem; } .key { margin-right: .8rem; white-space: nowrap; }
.swatch { display: inline-block; width: .8rem; height: .8rem; margin-right: .25rem; vertical-align: middle; }
footer { color: #777; font-size: .8rem; margin-top: 3rem; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{if .Interrupted}}<p class="banner">INTERRUPTED — partial results (stopped: {{.StopReason}})</p>
{{end -}}
<h2>Environment and settings</h2>
<table class="env">
{{range .Env}}<tr><td>{{index . 0}}</td><td>{{if eq (index . 0) "command"}}<code>{{index . 1}}</code>{{else}}{{index . 1}}{{end}}</td></tr>
{{end -}}
</table>
{{range .Warnings}}<p class="warn">⚠ {{.}}</p>
{{end -}}
{{if .Summary}}<h2>Summary</h2>
<ul class="summary">
{{range .Summary}}<li><strong>{{.Text}}</strong>{{range .Notes}}<br><span class="note">{{.}}</span>{{end}}</li>
{{end -}}
{{range .Crossovers}}<li class="crossover">{{.}}</li>
{{end -}}
</ul>
{{range .SummaryNote}}<p class="note">{{.}}</p>
{{end}}{{end -}}
{{if .Figures}}<h2>Charts</h2>
{{range .Figures}}<figure>
{{.SVG}}<figcaption class="note">{{.Title}}</figcaption>
</figure>
{{end}}{{end -}}
{{if .Breakdowns}}<h2>Where the CPU goes</h2>
<p class="note">CPU profiles of the measured windows (run --profile), 100 samples per CPU-second: a bar's length is its CPU per call against the section's longest, a segment a category's share (hover for figures).</p>
<p class="legend">{{range .Legend}}<span class="key"><span class="swatch" style="{{.Style}}"></span>{{.Title}}</span> {{end}}</p>
{{range .Breakdowns}}<h3>{{.Title}}</h3>
{{range .Sides}}<table class="bars"><caption>{{.Name}} CPU</caption>
{{range .Bars}}<tr><th class="{{.Proto}}">{{.Proto}}</th><td class="bar">{{range .Segments}}<span style="{{.Style}}" title="{{.Title}}"></span>{{end}}</td></tr>
<tr><td></td><td class="note">{{.Text}}</td></tr>
{{end}}</table>
{{end}}{{end}}{{end -}}
{{with .Fit}}<h2>{{.Title}}</h2>
<p class="verdict">{{.Verdict}}</p>
<table class="cells fit">
{{template "grid" .}}</table>
{{range .Notes}}<p class="note">{{.}}</p>
{{end}}{{end -}}
{{range .Capacity}}<h2>Capacity · {{.Title}}</h2>
<table class="cells capacity">
{{template "grid" .}}</table>
{{range .Series}}<h3>{{.Title}}</h3>
<p class="note">{{.Note}}</p>
{{if .Rows}}<table class="cells probes">
{{template "grid" .}}</table>
{{else}}<p>No probe ran.</p>
{{end}}{{end}}{{end -}}
{{if or .Groups (not .Capacity)}}<h2>Results by scenario</h2>
{{end -}}
{{if and (not .Groups) (not .Capacity)}}<p>No cells were measured.</p>
{{end -}}
{{range .Groups}}<h3>{{.Title}}</h3>
<table class="cells">
<thead><tr><th></th>{{range .Protos}}<th class="{{.}}">{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr><td>{{.Label}}</td>{{range .Vals}}<td>{{if .}}{{.}}{{else}}–{{end}}</td>{{end}}</tr>
{{end -}}
</tbody>
</table>
{{range .Lines}}<p class="verdict">{{.}}</p>
{{end -}}
{{if .Pooled}}<p class="note">{{.Pooled}}</p>
{{end -}}
{{range .Notes}}<p class="warn">⚠ {{.}}</p>
{{end -}}
{{end -}}
<footer>Generated by {{.Generator}} from a meteorbench/v1 result document.</footer>
</body>
</html>
{{define "grid"}}<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end -}}
</tbody>
{{end}}`))
