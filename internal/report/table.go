package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/meteorbench/meteorbench/internal/results"
)

// writeTable renders r as aligned terminal text: the environment, the
// summary (one line per verdict), then one section per scenario x batch x
// condition with the protocols as columns, the verdict's ratios and the
// cells' errors and warnings.
func writeTable(w io.Writer, r *results.Result) error {
	ew := &errWriter{w: w}
	if r.Interrupted {
		ew.printf("*** %s (%s) ***\n\n", interruptedBanner, orNA(r.Stop.String()))
	}
	tableEnv(ew, r)
	tableWarnings(ew, r)
	tableSummary(ew, r)
	if len(r.Cells) == 0 && len(r.Capacity) == 0 {
		ew.printf("\nno cells were measured\n")
	}
	tableCapacity(ew, r)
	tableFit(ew, r) // fit.go
	groups := groupCells(r)
	ratios := false
	for i, g := range groups {
		lines, note := verdictLines(r, groups, i)
		tableGroup(ew, g, lines, note)
		ratios = ratios || len(lines) > 0
	}
	if ratios {
		ew.printf("\n%s\n", LiveNote)
	}
	if r.Interrupted {
		ew.printf("\n*** %s ***\n", interruptedBanner)
	}
	return ew.err
}

func tableEnv(ew *errWriter, r *results.Result) {
	tw := columns(ew)
	for _, l := range envLines(r) {
		fmt.Fprintf(tw, "%s\t%s\n", l[0], l[1])
	}
	tw.Flush()
}

func tableWarnings(ew *errWriter, r *results.Result) {
	for _, wn := range r.Warnings {
		ew.printf("warning: %s\n", wn)
	}
}

// tableSummary prints the verdicts' summary lines, their notes indented
// under them, and the footnotes once.
func tableSummary(ew *errWriter, r *results.Result) {
	lines := summary(r)
	if len(lines) == 0 {
		return
	}
	ew.printf("\n== summary ==\n")
	for _, l := range lines {
		ew.printf("%s\n", l.Text)
		for _, n := range l.Notes {
			ew.printf("   · %s\n", n)
		}
	}
	for _, l := range crossoverLines(r) {
		ew.printf("%s\n", l)
	}
	for _, n := range summaryNotes(r) {
		ew.printf("· %s\n", n)
	}
}

// tableGroup prints one section: the side-by-side rows, the verdict's
// ratios when given, the cells' error examples and warnings.
func tableGroup(ew *errWriter, g *group, lines []string, note string) {
	ew.printf("\n== %s ==\n", g.title())
	for i, part := range tableParts(g) {
		if i > 0 {
			ew.printf("\n")
		}
		tw := columns(ew)
		fmt.Fprintln(tw, "\t"+strings.Join(part.protos(), "\t"))
		for _, row := range cellRows(part) {
			vals := make([]string, len(row.Vals))
			for i, v := range row.Vals {
				if v == "" {
					v = "–"
				}
				vals[i] = v
			}
			fmt.Fprintf(tw, "%s\t%s\n", row.Label, strings.Join(vals, "\t"))
		}
		tw.Flush()
	}
	for _, l := range lines {
		ew.printf("=> %s\n", l)
	}
	if note != "" {
		ew.printf("   %s\n", note)
	}
	for _, n := range groupNotes(g) {
		ew.printf("!  %s\n", n)
	}
}

// MaxTableColumns is the most protocols one table of a section puts side
// by side: a section of more (run --proto all: five) is printed as tables
// of up to three under each other, in display order (REST, REST+protobuf,
// gRPC; then gRPC-Web, Connect), so that a terminal line holds a row.
const MaxTableColumns = 3

// tableParts splits g's cells into the tables of its section: g itself up
// to MaxTableColumns protocols, else runs of MaxTableColumns.
func tableParts(g *group) []*group {
	if len(g.Cells) <= MaxTableColumns {
		return []*group{g}
	}
	var out []*group
	for cells := g.Cells; len(cells) > 0; {
		n := min(MaxTableColumns, len(cells))
		part := *g
		part.Cells = cells[:n]
		out = append(out, &part)
		cells = cells[n:]
	}
	return out
}

// LiveNote ends a table whose sections carry verdict ratios ("=>" lines):
// why the table a run prints on stdout as it goes lacks them.
const LiveNote = "· The \"=>\" lines under each section, and the run's duration, stop reason and confidence level\n" +
	"  above, are known only once the run has ended: the table a run prints on stdout as it measures\n" +
	"  has the summary instead."

// Live writes the table format while a run measures: the environment
// first (NewLive), each section as soon as its cells are measured (Group),
// and at the end the summary and the run's warnings (Finish). Its output,
// concatenated, has every section the table format of the finished result
// has, in measurement order, and the same summary; the per-section verdict
// ratios, drawn from the whole run, are in the summary only.
//
// A Live is not safe for concurrent use. The first write error stops all
// further output and is returned by every later call.
type Live struct {
	ew *errWriter
}

// NewLive prints r's environment header (r needs Env, Settings and
// Started; nothing else is read) and returns the writer for the sections.
func NewLive(w io.Writer, r *results.Result) *Live {
	l := &Live{ew: &errWriter{w: w}}
	tableEnv(l.ew, r)
	return l
}

// Group prints the section of one group of cells as soon as it is
// measured: one scenario x batch x condition, all its protocols. Cells of
// several groups print as several sections, in display order.
func (l *Live) Group(cells []results.Cell) error {
	ptrs := make([]*results.Cell, len(cells))
	for i := range cells {
		ptrs[i] = &cells[i]
	}
	for _, g := range groupOf(ptrs, nil) {
		tableGroup(l.ew, g, nil, "")
	}
	return l.ew.err
}

// Finish prints the end of the run: its warnings, the summary of r's
// verdicts (call analysis.Apply first) and, for a partial result, the
// interrupted banner.
func (l *Live) Finish(r *results.Result) error {
	if len(r.Warnings) > 0 {
		l.ew.printf("\n")
		tableWarnings(l.ew, r)
	}
	tableFit(l.ew, r) // a fit document's answer, known only at the end
	tableSummary(l.ew, r)
	if r.Interrupted {
		l.ew.printf("\n*** %s (%s) ***\n", interruptedBanner, orNA(r.Stop.String()))
	}
	return l.ew.err
}

// columns aligns the tab-separated cells written to it on w, two spaces
// apart, as every terminal table here does; Flush writes them.
func columns(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 8, 2, ' ', 0) }

// errWriter keeps the first write error so rendering code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) {
	fmt.Fprintf(e, format, args...)
}
