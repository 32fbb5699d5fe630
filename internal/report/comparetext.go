package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/meteorbench/meteorbench/internal/format"
)

// WriteComparison renders cmp as table, markdown or json.
func WriteComparison(w io.Writer, format string, cmp *Comparison) error {
	var buf bytes.Buffer
	var err error
	switch format {
	case "table":
		err = writeCompareText(&buf, cmp, false)
	case "markdown":
		err = writeCompareText(&buf, cmp, true)
	case "json":
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		err = enc.Encode(cmp)
	default:
		return fmt.Errorf("compare: unknown format %q (want one of %s)", format, strings.Join(CompareFormats, ", "))
	}
	if err != nil {
		return fmt.Errorf("compare: %s: %w", format, err)
	}
	_, err = buf.WriteTo(w)
	return err
}

// untestedMark follows the delta of a change that was not tested: one
// measurement a side (or no per-repeat values), so no significance.
const untestedMark = "†"

// deltaText is the delta column: "+6.5%" for a significant change, "~"
// when the repeats do not show the change to be significant (as benchstat
// prints it), "+6.5%†" for a change that was not tested.
func (d *MetricDelta) deltaText() string {
	if d.DeltaPct == nil {
		return "n/a"
	}
	if d.P != nil && !d.Significant {
		return "~"
	}
	pct := *d.DeltaPct
	s := fmt.Sprintf("%+.1f%%", pct)
	if math.Abs(pct) < 0.05 {
		s = "0.0%"
	}
	if d.P == nil {
		s += untestedMark
	}
	return s
}

// pText is the significance column: "p=0.008 n=5+5", or "" when untested.
func (d *MetricDelta) pText() string {
	if d.P == nil {
		return ""
	}
	return fmt.Sprintf("p=%.3f n=%d+%d", *d.P, d.OldN, d.NewN)
}

// verdict says whether a significant change is better or worse; a change
// that is not shown significant gets no verdict.
func (d *MetricDelta) verdict() string {
	if d.DeltaPct == nil || !d.Significant || math.Abs(*d.DeltaPct) < 0.05 {
		return ""
	}
	if (*d.DeltaPct > 0) == d.HigherIsBetter {
		return "better"
	}
	return "worse"
}

// footnotes explains the marks the cells used, each once: "~" with the
// first reason a test could not show a change, and the untested mark.
func (cmp *Comparison) footnotes() []string {
	var tilde, why string
	untested := false
	for _, cc := range cmp.Cells {
		for _, m := range cc.Metrics {
			switch {
			case m.P == nil && m.DeltaPct != nil:
				untested = true
			case m.P != nil && !m.Significant:
				tilde = "~: no significant change (Mann-Whitney U over the repeats, α=0.05)"
				if why == "" && strings.HasPrefix(m.Note, "need") {
					why = m.Note
				}
			}
		}
	}
	var out []string
	if tilde != "" {
		if why != "" {
			tilde += "; " + why
		}
		out = append(out, tilde)
	}
	if untested {
		out = append(out, untestedMark+": untested: single measurement (run both with --repeat 5 or more to test changes)")
	}
	return out
}

func writeCompareText(w io.Writer, cmp *Comparison, md bool) error {
	ew := &errWriter{w: w}
	esc := func(s string) string { return s }
	if md {
		esc = mdEscape
		ew.printf("# meteorbench compare\n\n")
		ew.printf("- **old**: %s (%s, repeat %d)\n", esc(cmp.Old.Name), esc(cmp.Old.Started), cmp.Old.Repeat)
		ew.printf("- **new**: %s (%s, repeat %d)\n", esc(cmp.New.Name), esc(cmp.New.Started), cmp.New.Repeat)
	} else {
		ew.printf("old  %s (%s, repeat %d)\n", cmp.Old.Name, cmp.Old.Started, cmp.Old.Repeat)
		ew.printf("new  %s (%s, repeat %d)\n", cmp.New.Name, cmp.New.Started, cmp.New.Repeat)
	}
	for _, s := range []Side{cmp.Old, cmp.New} {
		if s.Interrupted {
			ew.printf("%s%s was INTERRUPTED — partial results\n", map[bool]string{true: "- ", false: "! "}[md], esc(s.Name))
		}
	}
	compareVerdicts(ew, cmp, md, esc)
	if len(cmp.EnvChanges) == 0 {
		ew.printf("\nSame environment and settings.\n")
	} else {
		ew.printf("\nEnvironment and settings that differ:\n\n")
		if md {
			ew.printf("| | old | new |\n|:--|:--|:--|\n")
			for _, c := range cmp.EnvChanges {
				ew.printf("| %s | %s | %s |\n", esc(c.Field), esc(c.Old), esc(c.New))
			}
		} else {
			tw := columns(ew)
			for _, c := range cmp.EnvChanges {
				fmt.Fprintf(tw, "  %s\t%s → %s\n", c.Field, c.Old, c.New)
			}
			tw.Flush()
		}
	}
	compareCapacityText(ew, cmp, md, esc)
	if len(cmp.Cells) == 0 && len(cmp.Capacity) == 0 {
		ew.printf("\nNo cell is in both files.\n")
	}
	for _, cc := range cmp.Cells {
		if md {
			ew.printf("\n## %s\n\n| | old | new | delta | significance |\n|:--|--:|--:|--:|:--|\n", esc(cc.Key))
			for _, m := range cc.Metrics {
				ew.printf("| %s | %s | %s | %s | %s |\n", esc(m.Label), esc(format.Value(m.Old, m.kind)), esc(format.Value(m.New, m.kind)),
					esc(m.deltaText()), esc(strings.TrimSpace(m.verdict()+" "+m.pText())))
			}
			continue
		}
		ew.printf("\n%s\n", cc.Key)
		var tb bytes.Buffer
		tw := tabwriter.NewWriter(&tb, 0, 8, 2, ' ', tabwriter.AlignRight)
		width := 0
		for _, m := range cc.Metrics {
			width = max(width, len(m.Label))
		}
		fmt.Fprintf(tw, "\told\tnew\tdelta\t\n")
		for _, m := range cc.Metrics {
			p := ""
			if m.P != nil {
				p = "(" + m.pText() + ")"
			}
			fmt.Fprintf(tw, "  %-*s\t%s\t%s\t%s\t%s\t  %s\n", width, m.Label, format.Value(m.Old, m.kind), format.Value(m.New, m.kind), m.deltaText(), p, m.verdict())
		}
		tw.Flush()
		for _, l := range strings.SplitAfter(tb.String(), "\n") {
			ew.printf("%s", strings.TrimRight(l, " \n")+strings.Repeat("\n", strings.Count(l, "\n")))
		}
	}
	if notes := cmp.footnotes(); len(notes) > 0 {
		ew.printf("\n")
		for _, n := range notes {
			if md {
				ew.printf("<sub>%s</sub>  \n", esc(n))
			} else {
				ew.printf("%s\n", n)
			}
		}
	}
	for _, only := range []struct {
		what string
		keys []string
	}{{"old", cmp.OnlyOld}, {"new", cmp.OnlyNew}} {
		if len(only.keys) == 0 {
			continue
		}
		ew.printf("\nOnly in %s (%s):\n", only.what, esc(map[string]string{"old": cmp.Old.Name, "new": cmp.New.Name}[only.what]))
		for _, k := range only.keys {
			ew.printf("  - %s\n", esc(k))
		}
	}
	return ew.err
}

// compareVerdicts prints the two runs' summaries, old line over new line,
// per verdict.
func compareVerdicts(ew *errWriter, cmp *Comparison, md bool, esc func(string) string) {
	if len(cmp.Verdicts) == 0 {
		return
	}
	side := func(s, key string) string {
		if s == "" {
			return "(no verdict for " + key + ")"
		}
		return s
	}
	if md {
		ew.printf("\n## Verdicts\n\n| | summary |\n|:--|:--|\n")
		for _, v := range cmp.Verdicts {
			ew.printf("| old | %s |\n| new | %s |\n", esc(side(v.Old, v.Key)), esc(side(v.New, v.Key)))
		}
		return
	}
	ew.printf("\nVerdicts, old over new:\n")
	for _, v := range cmp.Verdicts {
		ew.printf("  old  %s\n  new  %s\n", side(v.Old, v.Key), side(v.New, v.Key))
	}
}
