package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/meteorbench/meteorbench/internal/results"
)

// writeTable renders r as aligned terminal text: the environment, then one
// block per scenario x batch x concurrency with the protocols as columns,
// a ratio line and the cell warnings.
func writeTable(w io.Writer, r *results.Result) error {
	ew := &errWriter{w: w}
	if r.Interrupted {
		ew.printf("*** %s (%s) ***\n\n", interruptedBanner, orNA(r.StopReason))
	}
	tw := tabwriter.NewWriter(ew, 0, 8, 2, ' ', 0)
	for _, l := range envLines(r) {
		fmt.Fprintf(tw, "%s\t%s\n", l[0], l[1])
	}
	tw.Flush()
	for _, wn := range r.Warnings {
		ew.printf("warning: %s\n", wn)
	}
	if len(r.Cells) == 0 {
		ew.printf("\nno cells were measured\n")
	}
	for _, g := range groupCells(r) {
		ew.printf("\n== %s ==\n", g.title())
		tw := tabwriter.NewWriter(ew, 0, 8, 2, ' ', 0)
		hdr := []string{""}
		for _, c := range g.Cells {
			hdr = append(hdr, string(c.Protocol))
		}
		fmt.Fprintln(tw, strings.Join(hdr, "\t"))
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
		lines, notes := ratioLines(g)
		for _, l := range lines {
			ew.printf("=> %s\n", l.String())
		}
		for _, n := range notes {
			ew.printf("   %s\n", n)
		}
		for _, wn := range cellWarnings(g) {
			ew.printf("!  %s\n", wn)
		}
	}
	if r.Interrupted {
		ew.printf("\n*** %s ***\n", interruptedBanner)
	}
	return ew.err
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
