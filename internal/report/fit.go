package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/meteorbench/meteorbench/internal/cpubreakdown"
	"github.com/meteorbench/meteorbench/internal/fit"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// This file renders a fit document (r.FitPlan and r.Fit, written by
// `meteorbench fit`): the question, the verdict, one column per protocol
// with what the traffic needs of each resource and its utilisation, the
// binding resource, the scale at saturation and, verified, the measured
// one; then the notes and what the model leaves out.

// fitTitle names the question: "Fit · tier 1cpu/100mbit · traffic
// small=800,large=20 · headroom 70%".
func fitTitle(p *results.FitPlan) string {
	t := fmt.Sprintf("Fit · tier %s · traffic %s · headroom %s", p.Tier, p.Traffic, format.Percent(p.Headroom))
	if p.SameHost {
		t += " · callers on the same host"
	}
	return t + " · costs " + p.Source
}

// fitUse is a need and its utilisation: "0.93 (93%)".
func fitUse(need string, f *results.Fit, resource string) string {
	if u, ok := f.Utilisation[resource]; ok {
		return need + " (" + format.Percent(u) + ")"
	}
	return need
}

// fitRows are the answer's rows, one column per protocol.
func fitRows(r *results.Result) (header []string, rows [][]string) {
	header = []string{""}
	for i := range r.Fit {
		header = append(header, r.Fit[i].Protocol.Title())
	}
	defs := []struct {
		label string
		val   func(f *results.Fit) string
	}{
		{"CPU cores", func(f *results.Fit) string {
			s := format.Number(f.CPUCores)
			if ci := f.CPUCoresCI; ci != nil {
				s += " [" + format.Number(ci.Lo) + ", " + format.Number(ci.Hi) + "]"
			}
			return fitUse(s, f, results.ResourceCPU)
		}},
		{"link sent (requests)", func(f *results.Fit) string {
			return fitUse(linkText(f, func(l *results.FitLink) float64 { return l.Sent }), f, results.ResourceLinkSent)
		}},
		{"link received (answers)", func(f *results.Fit) string {
			return fitUse(linkText(f, func(l *results.FitLink) float64 { return l.Received }), f, results.ResourceLinkReceived)
		}},
		{"memory (peak RSS)", func(f *results.Fit) string {
			if f.MemoryMiB == nil {
				return "n/a"
			}
			s := fitUse(format.Number(*f.MemoryMiB)+" MiB", f, results.ResourceMemory)
			if f.HeapMiB != nil {
				s += ", heap " + format.Number(*f.HeapMiB) + " MiB"
			}
			return s
		}},
		{"binding", func(f *results.Fit) string { return fit.ResourceName(f.Binding) }},
		{"max scale (saturation)", func(f *results.Fit) string { return format.Number(f.MaxScale) + "x" }},
		{"fits within " + format.Percent(r.FitPlan.Headroom), func(f *results.Fit) string {
			if f.CostsSuspect != "" {
				return "no verdict (generator-bound costs)"
			}
			return yesNo(f.Fits)
		}},
		{"smallest tier", func(f *results.Fit) string { return orDash(f.SmallestTier, len(r.FitPlan.Tiers) > 0) }},
		{"measured at", func(f *results.Fit) string {
			if f.MeasuredAt == nil {
				return "n/a"
			}
			return "server " + format.Percent(*f.MeasuredAt) + " busy"
		}},
	}
	verified := false
	for i := range r.Fit {
		verified = verified || r.Fit[i].PredictedMax != nil
	}
	if verified {
		defs = append(defs, []struct {
			label string
			val   func(f *results.Fit) string
		}{
			{"predicted max", func(f *results.Fit) string { return optScale(f.PredictedMax) }},
			{"measured max", func(f *results.Fit) string {
				if f.GeneratorBound != "" {
					return "generator-bound"
				}
				if f.MeasuredMax == nil {
					return "not saturated"
				}
				return optScale(f.MeasuredMax)
			}},
			{"prediction error", func(f *results.Fit) string {
				if f.PredictionError == nil {
					return "n/a"
				}
				if e := *f.PredictionError; e < 0 {
					return "-" + format.Percent(-e)
				}
				return "+" + format.Percent(*f.PredictionError)
			}},
		}...)
		// --profile: where the server's CPU went in the first saturated probe
		// (else the last one).
		atMax := func(f *results.Fit) *results.CPUBreakdown {
			var b *results.CPUBreakdown
			for _, pr := range f.Probes {
				b = pr.ServerCPUBreakdown
				if pr.Saturated {
					break
				}
			}
			return b
		}
		profiled := false
		for i := range r.Fit {
			profiled = profiled || atMax(&r.Fit[i]) != nil
		}
		if profiled {
			defs = append(defs, struct {
				label string
				val   func(f *results.Fit) string
			}{"server CPU at max", func(f *results.Fit) string {
				b := atMax(f)
				if b == nil {
					return ""
				}
				return cpubreakdown.Summary(b, 0.1)
			}})
		}
	}
	for _, d := range defs {
		row := []string{d.label}
		for i := range r.Fit {
			row = append(row, d.val(&r.Fit[i]))
		}
		rows = append(rows, row)
	}
	return header, rows
}

// linkText is one direction of the link in Mbit/s, with its interval
// when the cells were repeated and it is not a point.
func linkText(f *results.Fit, dir func(l *results.FitLink) float64) string {
	s := format.Number(dir(&f.LinkMbit))
	if f.LinkMbitLo != nil && f.LinkMbitHi != nil && dir(f.LinkMbitLo) != dir(f.LinkMbitHi) {
		s += " [" + format.Number(dir(f.LinkMbitLo)) + ", " + format.Number(dir(f.LinkMbitHi)) + "]"
	}
	return s + " Mbit/s"
}

func optScale(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return format.Number(*v) + "x"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// orDash is s, or "none" when a list was given, "–" when none was.
func orDash(s string, asked bool) string {
	switch {
	case s != "":
		return s
	case asked:
		return "none"
	}
	return "–"
}

// fitNotes are the notes under the answer, then what the model leaves out.
func fitNotes(p *results.FitPlan) []string {
	return append(append([]string(nil), p.Notes...), p.LeftOut)
}

// tableFit prints the answer of a fit document; nothing for others.
func tableFit(ew *errWriter, r *results.Result) {
	if r.FitPlan == nil {
		return
	}
	ew.printf("\n== %s ==\n%s\n\n", fitTitle(r.FitPlan), r.FitPlan.Verdict)
	header, rows := fitRows(r)
	tw := tabwriter.NewWriter(ew, 0, 8, 2, ' ', 0)
	for _, row := range append([][]string{header}, rows...) {
		for i, v := range row {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, v)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	for _, n := range fitNotes(r.FitPlan) {
		ew.printf("· %s\n", n)
	}
}

// markdownFit prints the answer of a fit document as a section.
func markdownFit(ew *errWriter, r *results.Result) {
	if r.FitPlan == nil {
		return
	}
	ew.printf("\n## %s\n\n%s\n\n", mdEscape(fitTitle(r.FitPlan)), mdEscape(r.FitPlan.Verdict))
	header, rows := fitRows(r)
	for i, row := range append([][]string{header}, rows...) {
		ew.printf("|")
		for _, v := range row {
			ew.printf(" %s |", mdEscape(v))
		}
		ew.printf("\n")
		if i == 0 {
			ew.printf("|:--|")
			for range row[1:] {
				ew.printf("--:|")
			}
			ew.printf("\n")
		}
	}
	ew.printf("\n")
	for _, n := range fitNotes(r.FitPlan) {
		ew.printf("<sub>%s</sub>  \n", mdEscape(n))
	}
}

// FitCSVHeader is the columns of a fit document's CSV: one row per
// protocol of the answer (the cells measured stay in the JSON document).
var FitCSVHeader = []string{"tier", "traffic", "headroom", "same_host", "source", "protocol", "cpu_cores", "cpu_cores_lo", "cpu_cores_hi",
	"link_mbit_sent", "link_mbit_received", "memory_mib", "heap_mib", "utilisation_cpu", "utilisation_link_sent", "utilisation_link_received",
	"utilisation_memory", "binding", "max_scale", "fits", "smallest_tier", "measured_at_utilisation", "predicted_max", "measured_max",
	"prediction_error", "generator_bound", "verdict"}

// writeFitCSV writes a fit document's answer, one row per protocol.
func writeFitCSV(w io.Writer, r *results.Result) error {
	cw := csv.NewWriter(w)
	cw.Write(FitCSVHeader)
	p := r.FitPlan
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'g', 6, 64)
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for i := range r.Fit {
		f := &r.Fit[i]
		lo, hi := "", ""
		if ci := f.CPUCoresCI; ci != nil {
			lo, hi = num(ci.Lo), num(ci.Hi)
		}
		util := func(res string) string {
			if u, ok := f.Utilisation[res]; ok {
				return num(u)
			}
			return ""
		}
		cw.Write([]string{p.Tier, p.Traffic, num(p.Headroom), strconv.FormatBool(p.SameHost), p.Source, string(f.Protocol),
			num(f.CPUCores), lo, hi, num(f.LinkMbit.Sent), num(f.LinkMbit.Received), opt(f.MemoryMiB), opt(f.HeapMiB),
			util(results.ResourceCPU), util(results.ResourceLinkSent), util(results.ResourceLinkReceived), util(results.ResourceMemory),
			f.Binding, num(f.MaxScale), strconv.FormatBool(f.Fits), f.SmallestTier, opt(f.MeasuredAt), opt(f.PredictedMax),
			opt(f.MeasuredMax), opt(f.PredictionError), f.GeneratorBound, f.Verdict})
	}
	cw.Flush()
	return cw.Error()
}

// htmlFit is a fit document's answer on the page.
type htmlFit struct {
	Title, Verdict string
	Header         []string
	Rows           [][]string
	Notes          []string
}

func htmlFitOf(r *results.Result) *htmlFit {
	if r.FitPlan == nil {
		return nil
	}
	h := &htmlFit{Title: fitTitle(r.FitPlan), Verdict: r.FitPlan.Verdict, Notes: fitNotes(r.FitPlan)}
	h.Header, h.Rows = fitRows(r)
	return h
}
