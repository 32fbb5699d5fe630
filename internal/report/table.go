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
		ew.printf("*** %s (%s) ***\n\n", interruptedBanner, orNA(r.StopReason))
	}
	tableEnv(ew, r)
	tableWarnings(ew, r)
	tableSummary(ew, r)
	if len(r.Cells) == 0 {
		ew.printf("\nno cells were measured\n")
	}
	groups := groupCells(r)
	for i, g := range groups {
		lines, note := verdictLines(r, groups, i)
		tableGroup(ew, g, lines, note)
	}
	if r.Interrupted {
		ew.printf("\n*** %s ***\n", interruptedBanner)
	}
	return ew.err
}

func tableEnv(ew *errWriter, r *results.Result) {
	tw := tabwriter.NewWriter(ew, 0, 8, 2, ' ', 0)
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
	for _, n := range summaryNotes(r) {
		ew.printf("· %s\n", n)
	}
}

// tableGroup prints one section: the side-by-side rows, the verdict's
// ratios when given, the cells' error examples and warnings.
func tableGroup(ew *errWriter, g *group, lines []string, note string) {
	ew.printf("\n== %s ==\n", g.title())
	tw := tabwriter.NewWriter(ew, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "\t"+strings.Join(g.protos(), "\t"))
	for _, row := range cellRows(g) {
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
