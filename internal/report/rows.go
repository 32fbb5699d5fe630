package report

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/stats"
)

// A row is one line of a side-by-side table: a label and one value per
// protocol column ("" when it does not apply).
type row struct {
	Label string
	Vals  []string
}

// interval returns a cell's confidence interval for a figure, when the
// cell was repeated. When some repeats lack the figure (a repeat too short
// to complete one batch has no time per batch) but the interval counts
// them, it is recomputed from the repeats that have it.
func interval(c *results.Cell, f results.Figure) (results.Interval, bool) {
	iv, ok := c.CI[f]
	if !ok || iv.N <= 1 {
		return iv, false
	}
	if vals := c.RepeatValues(f); len(vals) != iv.N && len(c.Repeats) == iv.N {
		iv = stats.Summarize(vals)
		return iv, iv.N > 1
	}
	return iv, true
}

// kindOf says how a figure is formatted, from its unit.
func kindOf(f results.Figure) format.Kind {
	info, _ := f.Info()
	switch info.Unit {
	case "µs":
		return format.KindUS
	case "ms":
		return format.KindMS
	case "B":
		return format.KindBytes
	}
	return format.KindRate
}

// figureText formats a figure of c, as "median [lo, hi]" when repeated;
// ok is false when the cell has no such figure.
func figureText(c *results.Cell, f results.Figure) (string, bool) {
	v, ok := c.Figure(f)
	if !ok {
		return "", false
	}
	if iv, ok := interval(c, f); ok {
		return format.Interval(iv.Median, iv.Lo, iv.Hi, kindOf(f)), true
	}
	return format.Value(v, kindOf(f)), true
}

// A rowDef is one row of a group's table.
type rowDef struct {
	label string
	val   func(c *results.Cell) string // "" when it does not apply to c
}

// figRow is the row of one figure, labelled as results.Figures labels it:
// "–" in a cell without successful calls, "n/a" when the cell has calls
// but not the figure. An optional figure's row is shown only when some
// cell has it.
func figRow(f results.Figure, optional bool) rowDef {
	info, _ := f.Info()
	return rowDef{info.Label, func(c *results.Cell) string {
		s, ok := figureText(c, f)
		switch {
		case ok:
			return s
		case optional:
			return ""
		case c.Calls == 0:
			return "–"
		}
		return "n/a"
	}}
}

// latRow is a latency field that is not a figure of its own (max,
// uncorrected, first record): "" when the cell does not have it.
func latRow(label string, l func(c *results.Cell) *results.Latency, v func(l *results.Latency) float64) rowDef {
	return rowDef{label, func(c *results.Cell) string {
		if lat := l(c); lat != nil && c.Calls > 0 {
			return format.US(v(lat))
		}
		return ""
	}}
}

// openRow is a figure of open-loop cells only.
func openRow(label string, v func(c *results.Cell) string) rowDef {
	return rowDef{label, func(c *results.Cell) string {
		if c.RateRequested == 0 {
			return ""
		}
		return v(c)
	}}
}

func p50(l *results.Latency) float64 { return l.P50 }
func p99(l *results.Latency) float64 { return l.P99 }

// cellRows builds the side-by-side rows of a group. Rows that apply to no
// cell of the group (first record outside the stream scenario, rates and
// uncorrected latency in closed loop, time per batch in open loop, last
// byte and decode time when the adapters report neither) are left out.
func cellRows(g *group) []row {
	defs := []rowDef{
		{"calls", func(c *results.Cell) string { return format.Count(c.Calls) }},
		{"errors", func(c *results.Cell) string { return fmtErrors(c.Errors, c.ErrorClasses) }},
		{"stopped", func(c *results.Cell) string { return string(c.StopReason) }},
		{"duration", func(c *results.Cell) string { return format.Seconds(c.DurationS) }},
		{"connections", func(c *results.Cell) string { return strconv.Itoa(c.Connections) }},
		figRow(results.FigCallsPerS, false),
		{"MB/s", func(c *results.Cell) string { return format.Number(c.MBPerS) }},
		openRow("rate requested", func(c *results.Cell) string { return format.Rate(c.RateRequested) + "/s" }),
		openRow("rate achieved", func(c *results.Cell) string { return format.Rate(c.RateAchieved) + "/s" }),
		openRow("late calls", func(c *results.Cell) string { return format.Count(c.LateCalls) }),
		figRow(results.FigLatencyP50, false),
		figRow(results.FigLatencyP90, false),
		figRow(results.FigLatencyP99, false),
		figRow(results.FigLatencyP999, false),
		latRow("latency max", func(c *results.Cell) *results.Latency { return &c.LatencyUS }, func(l *results.Latency) float64 { return l.Max }),
		latRow("uncorrected p50", func(c *results.Cell) *results.Latency { return c.LatencyUncorrectedUS }, p50),
		latRow("uncorrected p99", func(c *results.Cell) *results.Latency { return c.LatencyUncorrectedUS }, p99),
		latRow("first record p50", func(c *results.Cell) *results.Latency { return c.FirstRecordUS }, p50),
		latRow("first record p99", func(c *results.Cell) *results.Latency { return c.FirstRecordUS }, p99),
		latRow("stream setup p50", func(c *results.Cell) *results.Latency { return c.StreamSetupUS }, p50),
		latRow("stream setup p99", func(c *results.Cell) *results.Latency { return c.StreamSetupUS }, p99),
		figRow(results.FigLastByteP50, true),
		figRow(results.FigDecodeMean, true),
		batchRow(g.Batch),
		figRow(results.FigBytesSent, false),
		figRow(results.FigBytesReceived, false),
		figRow(results.FigClientCPU, false),
		figRow(results.FigServerCPU, false),
		{"of it server / proxy", func(c *results.Cell) string { // behind run --proxy
			if c.BackendCPUUSPerCall == nil || c.ProxyCPUUSPerCall == nil {
				return ""
			}
			return format.US(*c.BackendCPUUSPerCall) + " / " + format.US(*c.ProxyCPUUSPerCall)
		}},
		{"server CPU busy", func(c *results.Cell) string {
			if c.ServerUtilisation == nil || c.Calls == 0 {
				return ""
			}
			return format.Percent(*c.ServerUtilisation)
		}},
		{"generator wake p50/p99", func(c *results.Cell) string {
			if g := c.GeneratorDelayUS; g != nil {
				return format.US(g.Wake.P50) + " / " + format.US(g.Wake.P99)
			}
			return ""
		}},
		openRow("hand-off p50/p99", func(c *results.Cell) string {
			if g := c.GeneratorDelayUS; g != nil && g.Handoff != nil {
				return format.US(g.Handoff.P50) + " / " + format.US(g.Handoff.P99)
			}
			return ""
		}),
		{"suspect", func(c *results.Cell) string {
			if len(c.Suspect) > 0 {
				return "YES (see notes)"
			}
			return ""
		}},
	}
	defs = insertAfter(defs, "late calls", mixRows(g))            // mixrows.go
	defs = insertAfter(defs, "server CPU busy", breakdownRows(g)) // breakdownrows.go
	var rows []row
	for _, d := range defs {
		r := row{Label: d.label, Vals: make([]string, len(g.Cells))}
		any := false
		for i, c := range g.Cells {
			r.Vals[i] = d.val(c)
			if r.Vals[i] != "" {
				any = true
			}
		}
		if any {
			rows = append(rows, r)
		}
	}
	return rows
}

// batchRow is the time per batch of a closed-loop cell, with the spread
// within the measurement ("± stddev"); open-loop cells have none.
func batchRow(batch int) rowDef {
	info, _ := results.FigBatchMS.Info()
	return rowDef{fmt.Sprintf("%s of %d", info.Label, batch), func(c *results.Cell) string {
		if c.Mode == results.ModeOpen || c.RateRequested > 0 {
			return ""
		}
		s, ok := figureText(c, results.FigBatchMS)
		if !ok {
			return "–"
		}
		if c.BatchMS.Stddev > 0 {
			s += " ± " + format.US(c.BatchMS.Stddev*1e3)
		}
		return s
	}}
}

// groupNotes lists what a group's table cannot show, one line each: the
// first error message of every error class ("rest: invalid-response ×1,000:
// record 3: id 7 ..."), then the cells' warnings ("grpc: server CPU unknown").
func groupNotes(g *group) []string {
	var out []string
	for _, c := range g.Cells {
		for _, why := range c.Suspect {
			out = append(out, string(c.Protocol)+": SUSPECT (no verdict): "+why)
		}
	}
	for _, c := range g.Cells {
		for _, class := range c.ErrorClasses.Sorted() {
			s := fmt.Sprintf("%s: %s ×%s", c.Protocol, class, format.Count(c.ErrorClasses[class]))
			if ex := c.ErrorExamples[class]; ex != "" {
				s += ": " + truncate(oneLine(ex), maxExample)
			}
			out = append(out, s)
		}
	}
	for _, c := range g.Cells {
		for _, w := range foldRepeats(c.Warnings) {
			out = append(out, string(c.Protocol)+": "+w)
		}
	}
	return out
}

// repeatPrefix is how a repeated cell's warnings name their window
// ("repeat 3: ..."); number is a number in a warning's text.
var (
	repeatPrefix = regexp.MustCompile(`^repeat (\d+): `)
	number       = regexp.MustCompile(`\d(?:[\d,]*\d)?(?:\.\d+)?`)
)

// foldRepeats folds the warnings of a repeated cell's windows that say the
// same thing with other numbers into one line: "repeats 1-3, 5: " and the
// text with each number that differs given as its range over them (small
// calls at 10,000 calls/s: five lines "repeat N: 181 of 6000 calls
// started more than 1ms after they were due: ..." become one). A warning
// said once, or not of a window, is kept as it is. The JSON keeps every
// window's warnings.
func foldRepeats(ws []string) []string {
	// A line is a warning not of a window (plain), or the windows'
	// warnings of one shape.
	type line struct {
		plain          string
		repeats, texts []string
	}
	var lines []*line
	byShape := map[string]*line{}
	for _, w := range ws {
		m := repeatPrefix.FindStringSubmatch(w)
		if m == nil {
			lines = append(lines, &line{plain: w})
			continue
		}
		text := w[len(m[0]):]
		shape := number.ReplaceAllString(text, "#")
		l, ok := byShape[shape]
		if !ok {
			l = &line{}
			byShape[shape] = l
			lines = append(lines, l)
		}
		l.repeats = append(l.repeats, m[1])
		l.texts = append(l.texts, text)
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		switch len(l.texts) {
		case 0:
			out = append(out, l.plain)
		case 1:
			out = append(out, "repeat "+l.repeats[0]+": "+l.texts[0])
		default:
			out = append(out, "repeats "+spans(l.repeats)+": "+numberRanges(l.texts))
		}
	}
	return out
}

// numberRanges is texts (the same but for their numbers) with each number
// that differs among them given as "min–max".
func numberRanges(texts []string) string {
	nums := make([][]string, len(texts))
	for i, t := range texts {
		nums[i] = number.FindAllString(t, -1)
	}
	k := 0
	return number.ReplaceAllStringFunc(texts[0], func(first string) string {
		lo, hi := first, first
		for _, ns := range nums[1:] {
			if value(ns[k]) < value(lo) {
				lo = ns[k]
			}
			if value(ns[k]) > value(hi) {
				hi = ns[k]
			}
		}
		k++
		if lo == hi {
			return lo
		}
		return lo + "–" + hi
	})
}

// value is a number of a warning's text.
func value(s string) float64 {
	v, _ := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	return v
}

// spans writes ascending repeat numbers with runs as ranges: "1-3, 5".
func spans(ns []string) string {
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && value(ns[j+1]) == value(ns[j])+1 {
			j++
		}
		if j > i {
			parts = append(parts, ns[i]+"-"+ns[j])
		} else {
			parts = append(parts, ns[i])
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// maxExample bounds an error example, in characters: enough for the
// message's gist, short enough for one terminal line.
const maxExample = 80

// oneLine folds whitespace runs (newlines included) into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// truncate cuts s to at most n characters, marking the cut with " ...".
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimRight(string(r[:n-4]), " ") + " ..."
}

// fmtErrors formats an error count with its classes, most frequent first:
// "4 (deadline_exceeded 3, unavailable 1)".
func fmtErrors(n int64, classes results.ErrorCounts) string {
	if len(classes) == 0 {
		return format.Count(n)
	}
	return format.Count(n) + " (" + classes.String() + ")"
}
