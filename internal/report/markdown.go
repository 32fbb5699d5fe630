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
// a list, then one table per scenario x batch x concurrency with the
// protocols as columns, the ratio line in bold and warnings as a list.
func writeMarkdown(w io.Writer, r *results.Result) error {
	ew := &errWriter{w: w}
	ew.printf("# meteorbench results\n\n")
	if r.Interrupted {
		ew.printf("> **%s** (stopped: %s)\n\n", interruptedBanner, mdEscape(orNA(r.StopReason)))
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
	if len(r.Cells) == 0 {
		ew.printf("\nNo cells were measured.\n")
	}
	for _, g := range groupCells(r) {
		ew.printf("\n## %s\n\n", mdEscape(g.title()))
		ew.printf("|  |")
		for _, c := range g.Cells {
			ew.printf(" %s |", mdEscape(string(c.Protocol)))
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
		lines, notes := ratioLines(g)
		if len(lines) > 0 {
			ew.printf("\n")
		}
		for _, l := range lines {
			ew.printf("**%s** %s  \n", mdEscape(l.Proto), mdEscape(l.Text))
		}
		for _, n := range notes {
			ew.printf("<sub>%s</sub>  \n", mdEscape(n))
		}
		if ws := cellWarnings(g); len(ws) > 0 {
			ew.printf("\n")
			for _, wn := range ws {
				ew.printf("- ⚠ %s\n", mdEscape(wn))
			}
		}
	}
	return ew.err
}
