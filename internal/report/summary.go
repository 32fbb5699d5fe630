package report

import (
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/results"
)

// The summary is what package analysis concluded (r.Verdicts), formatted:
// every format shows it first. Reporters compute no verdict; a document
// without verdicts (written before they existed) has no summary unless the
// caller runs analysis.Apply first, as the report and compare commands do.

// A summaryLine is one verdict's summary with the notes that qualify it.
type summaryLine struct {
	Text  string
	Notes []string
}

// String is the line with its notes in brackets.
func (s summaryLine) String() string {
	if len(s.Notes) == 0 {
		return s.Text
	}
	return s.Text + " (" + strings.Join(s.Notes, "; ") + ")"
}

// summary returns one line per verdict, in the document's order. A note
// every verdict shares is left out of the lines: summaryNotes says it once.
func summary(r *results.Result) []summaryLine {
	common := map[string]bool{}
	for _, n := range sharedNotes(r.Verdicts) {
		common[n] = true
	}
	out := make([]summaryLine, 0, len(r.Verdicts))
	for _, v := range r.Verdicts {
		l := summaryLine{Text: v.Summary}
		for _, n := range v.Notes {
			if !common[n] {
				l.Notes = append(l.Notes, n)
			}
		}
		out = append(out, l)
	}
	return out
}

// crossoverLines are the payload-size crossovers (r.Crossovers, computed by
// package analysis) as the summary prints them, right after the verdicts'
// lines: "large: gRPC faster (p50) from 100 records, more calls/s from 100
// records (measured 1, 10, 100, 1000, 10000)".
func crossoverLines(r *results.Result) []string {
	return analysis.CrossoverLines(r.Crossovers)
}

// summaryNotes are the footnotes of the summary, each said once: the notes
// every verdict shares, and what the significance labels mean when the
// ratios carry no test.
func summaryNotes(r *results.Result) []string {
	out := sharedNotes(r.Verdicts)
	if pc := r.ProfilingCost; pc != nil {
		out = append(out, profilingCostNote(pc)) // breakdownrows.go
	}
	if bs, ok := sameBatches(r.Verdicts); ok {
		out = append(out, "each verdict pools batches "+bs)
	}
	counts := map[results.Significance]int{}
	total := 0
	for _, v := range r.Verdicts {
		for _, vs := range v.Versus {
			for _, ra := range vs.Ratios {
				counts[ra.Significance]++
				total++
			}
		}
	}
	if n := counts[results.Untested]; n > 0 {
		what := "some ratios"
		if n == total {
			what = "ratios"
		}
		if len(r.Cells) == 0 && len(r.Capacity) > 0 {
			// capacity repeats whole searches; its --repeat gives each
			// found rate a median and a range.
			out = append(out, "untested: "+what+" from one search per protocol (run capacity with --repeat 3 for each rate's median and range)")
		} else {
			out = append(out, "untested: "+what+" from single measurements (run with --repeat 5 to test them)")
		}
	}
	if counts[results.NotSignificant] > 0 {
		out = append(out, "within noise (±N%): the repeats do not show a difference (Mann-Whitney U, α=0.05); ±N% is the ratio's interval")
	}
	return out
}

// sharedNotes are the notes every verdict has, when there are several.
func sharedNotes(vs []results.Verdict) []string {
	if len(vs) < 2 {
		return nil
	}
	var out []string
	for _, n := range vs[0].Notes {
		all := true
		for _, v := range vs[1:] {
			if !contains(v.Notes, n) {
				all = false
				break
			}
		}
		if all {
			out = append(out, n)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// verdictLines are the per-protocol ratios of the verdict a group belongs
// to ("gRPC against REST: 3.9x faster (p50), ..."), shown under the last
// of the verdict's groups only (a verdict pools batch sizes), with a note
// naming the batches pooled unless the summary names them for all
// verdicts. nil for the other groups, and when r has no verdict for the
// group.
func verdictLines(r *results.Result, groups []*group, i int) (lines []string, note string) {
	g := groups[i]
	if i+1 < len(groups) && groups[i+1].Scenario == g.Scenario && groups[i+1].Condition == g.Condition {
		return nil, ""
	}
	for _, v := range r.Verdicts {
		if v.Scenario != g.Scenario || v.Condition != g.Condition {
			continue
		}
		for _, vs := range v.Versus {
			lines = append(lines, analysis.Line(v.Baseline, vs))
		}
		if _, same := sameBatches(r.Verdicts); len(lines) > 0 && len(v.Batches) > 1 && !same {
			note = "verdict over batches " + batchList(v.Batches) + " pooled"
		}
		return lines, note
	}
	return nil, ""
}

// sameBatches reports whether every verdict pools the same several batch
// sizes, and lists them: the summary then says it once for all.
func sameBatches(vs []results.Verdict) (string, bool) {
	if len(vs) == 0 || len(vs[0].Batches) < 2 {
		return "", false
	}
	first := batchList(vs[0].Batches)
	for _, v := range vs[1:] {
		if batchList(v.Batches) != first {
			return "", false
		}
	}
	return first, true
}

func batchList(batches []int) string {
	bs := make([]string, len(batches))
	for i, b := range batches {
		bs[i] = strconv.Itoa(b)
	}
	return strings.Join(bs, ", ")
}
