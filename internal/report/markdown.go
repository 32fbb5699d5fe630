package report

import (
	"io"
	"strings"

	"github.com/meteorbench/meteorbench/internal/results"
)

// mdReplacer escapes the characters GitHub-flavoured Markdown would read
// as markup (a lone "[lo, hi]:" would even become a link definition).
var mdReplacer = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", `\<`, ">", `\>`, "|", `\|`, "~", `\~`, "#", `\#`,
)

func mdEscape(s string) string { return mdReplacer.Replace(s) }

// writeMarkdown renders r as GitHub-flavoured Markdown: the environment as
// a list, the summary (one item per verdict), then one table per scenario x
// batch x condition with the protocols as columns, the verdict's ratios and
// the cells' errors and warnings as a list.
func writeMarkdown(w io.Writer, r *results.Result) error {
	ew := &errWriter{w: w}
	ew.printf("# meteorbench results\n\n")
	if r.Interrupted {
		ew.printf("> **%s** (stopped: %s)\n\n", interruptedBanner, mdEscape(orNA(r.Stop.String())))
	}
	for _, l := range envLines(r) {
		v := mdEscape(l[1])
		if l[0] == "command" {
			v = "`" + strings.ReplaceAll(l[1], "`", "'") + "`"
		}
		ew.printf("- **%s**: %s\n", mdEscape(l[0]), v)
	}
	for _, wn := range r.Warnings {
		ew.printf("- **warning**: %s\n", mdEscape(wn))
	}
	if lines := summary(r); len(lines) > 0 {
		ew.printf("\n## Summary\n\n")
		for _, l := range lines {
			ew.printf("- %s\n", mdEscape(l.Text))
			for _, n := range l.Notes {
				ew.printf("  - %s\n", mdEscape(n))
			}
		}
		for _, l := range crossoverLines(r) {
			ew.printf("- %s\n", mdEscape(l))
		}
		if notes := summaryNotes(r); len(notes) > 0 {
			ew.printf("\n")
			for _, n := range notes {
				ew.printf("<sub>%s</sub>  \n", mdEscape(n))
			}
		}
	}
	if len(r.Cells) == 0 && len(r.Capacity) == 0 {
		ew.printf("\nNo cells were measured.\n")
	}
	markdownCapacity(ew, r)
	groups := groupCells(r)
	for i, g := range groups {
		ew.printf("\n## %s\n\n", mdEscape(g.title()))
		ew.printf("|  |")
		for _, p := range g.protos() {
			ew.printf(" %s |", mdEscape(p))
		}
		ew.printf("\n|:--|")
		for range g.Cells {
			ew.printf("--:|")
		}
		ew.printf("\n")
		for _, row := range cellRows(g) {
			ew.printf("| %s |", mdEscape(row.Label))
			for _, v := range row.Vals {
				if v == "" {
					v = "–"
				}
				ew.printf(" %s |", mdEscape(v))
			}
			ew.printf("\n")
		}
		lines, note := verdictLines(r, groups, i)
		if len(lines) > 0 {
			ew.printf("\n")
		}
		for _, l := range lines {
			ew.printf("**%s**  \n", mdEscape(l))
		}
		if note != "" {
			ew.printf("<sub>%s</sub>  \n", mdEscape(note))
		}
		if ns := groupNotes(g); len(ns) > 0 {
			ew.printf("\n")
			for _, n := range ns {
				ew.printf("- ⚠ %s\n", mdEscape(n))
			}
		}
	}
	return ew.err
}
