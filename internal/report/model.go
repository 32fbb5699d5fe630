package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/api"

	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/stats"
)

func rank[T comparable](known []T, s T) int {
	for i, k := range known {
		if k == s {
			return i
		}
	}
	return len(known)
}

func protoLess(a, b api.Protocol) bool {
	ra, rb := rank(api.Protocols(), a), rank(api.Protocols(), b)
	if ra != rb {
		return ra < rb
	}
	return a < b
}

// protocols returns the protocols present in cells, in display order.
func protocols(cells []results.Cell) []api.Protocol {
	seen := map[api.Protocol]bool{}
	var out []api.Protocol
	for i := range cells {
		if p := cells[i].Protocol; !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return protoLess(out[i], out[j]) })
	return out
}

// A group is the cells of one scenario x batch x concurrency (x rate): the
// protocols to put side by side.
type group struct {
	Scenario    api.Scenario
	Batch       int
	Concurrency int
	Rate        float64 // requested calls/s, open loop only
	Mode        string
	Cells       []*results.Cell // in protocol display order
}

// family is the part of a group's identity charts share across batches.
func (g *group) family() string {
	return fmt.Sprintf("%s/c%d/r%g", g.Scenario, g.Concurrency, g.Rate)
}

// title is the group's heading: "small (GetVersion) · batch 100 · concurrency 4".
func (g *group) title() string {
	s := g.Scenario.Title()
	s += fmt.Sprintf(" · batch %d · concurrency %d", g.Batch, g.Concurrency)
	if g.Rate > 0 {
		s += " · open loop at " + fmtRate(g.Rate) + " calls/s"
	}
	return s
}

// short is a compact label: "small b100 c4".
func (g *group) short() string {
	s := fmt.Sprintf("%s b%d c%d", g.Scenario, g.Batch, g.Concurrency)
	if g.Rate > 0 {
		s += " @" + strconv.FormatFloat(g.Rate, 'g', -1, 64) + "/s"
	}
	return s
}

// chartTitle labels the group's latency panel: "small · batch 100 · c=4".
func (g *group) chartTitle() string {
	s := fmt.Sprintf("%s · batch %d · c=%d", g.Scenario, g.Batch, g.Concurrency)
	if g.Rate > 0 {
		s += " · " + fmtRate(g.Rate) + "/s"
	}
	return s
}

// cell returns the group's cell for protocol p, or nil.
func (g *group) cell(p api.Protocol) *results.Cell {
	for _, c := range g.Cells {
		if c.Protocol == p {
			return c
		}
	}
	return nil
}

// scenarioLess orders scenarios as the run's settings list them, then the
// known order, then by name.
func scenarioLess(order []api.Scenario) func(a, b api.Scenario) bool {
	return func(a, b api.Scenario) bool {
		ra, rb := rank(order, a), rank(order, b)
		if ra != rb {
			return ra < rb
		}
		ra, rb = rank(api.Scenarios(), a), rank(api.Scenarios(), b)
		if ra != rb {
			return ra < rb
		}
		return a < b
	}
}

// groupCells splits r's cells into groups, in a stable display order.
func groupCells(r *results.Result) []*group {
	type gkey struct {
		scenario    api.Scenario
		batch, conc int
		rate        float64
	}
	byKey := map[gkey]*group{}
	var out []*group
	for i := range r.Cells {
		c := &r.Cells[i]
		k := gkey{c.Scenario, c.Batch, c.Concurrency, c.RateRequested}
		g := byKey[k]
		if g == nil {
			g = &group{Scenario: c.Scenario, Batch: c.Batch, Concurrency: c.Concurrency, Rate: c.RateRequested, Mode: c.Mode}
			byKey[k] = g
			out = append(out, g)
		}
		g.Cells = append(g.Cells, c)
	}
	less := scenarioLess(r.Settings.Scenarios)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.Scenario != b.Scenario:
			return less(a.Scenario, b.Scenario)
		case a.Concurrency != b.Concurrency:
			return a.Concurrency < b.Concurrency
		case a.Rate != b.Rate:
			return a.Rate < b.Rate
		default:
			return a.Batch < b.Batch
		}
	})
	for _, g := range out {
		sort.SliceStable(g.Cells, func(i, j int) bool { return protoLess(g.Cells[i].Protocol, g.Cells[j].Protocol) })
	}
	return out
}

// figureValue returns a cell's figure.
func figureValue(c *results.Cell, name results.Figure) (float64, bool) { return c.Figure(name) }

// interval returns a cell's confidence interval for a figure, when the
// cell was repeated. For time per batch, repeats that completed no batch
// (recorded as 0) are left out and the interval recomputed.
func interval(c *results.Cell, name results.Figure) (results.Interval, bool) {
	iv, ok := c.CI[name]
	if !ok || iv.N <= 1 {
		return iv, false
	}
	if name == "batch_ms_mean" {
		if vals := repeatValues(c, name); len(vals) != iv.N && len(c.Repeats) == iv.N {
			iv = stats.Summarize(vals)
			return iv, iv.N > 1
		}
	}
	return iv, true
}

// sampleValue returns a figure of one repeat; a time per batch of 0 means
// no batch completed in that repeat.
func sampleValue(s results.Sample, name results.Figure) (float64, bool) {
	v, ok := s[name]
	if name == "batch_ms_mean" && v <= 0 {
		return 0, false
	}
	return v, ok
}

// repeatValues returns a figure's per-repeat values.
func repeatValues(c *results.Cell, name results.Figure) []float64 {
	var out []float64
	for _, s := range c.Repeats {
		if v, ok := sampleValue(s, name); ok {
			out = append(out, v)
		}
	}
	return out
}

// paired returns the per-repeat values of a figure in a and b for the
// repeats where both have it, in repeat order.
func paired(a, b *results.Cell, name results.Figure) (av, bv []float64) {
	n := min(len(a.Repeats), len(b.Repeats))
	for i := 0; i < n; i++ {
		x, okA := sampleValue(a.Repeats[i], name)
		y, okB := sampleValue(b.Repeats[i], name)
		if okA && okB {
			av = append(av, x)
			bv = append(bv, y)
		}
	}
	return av, bv
}

// A row is one line of a side-by-side table: a label and one value per
// protocol column ("" when it does not apply).
type row struct {
	Label string
	Vals  []string
}

// figureCell formats a figure of c, as "median [lo, hi]" when repeated.
func figureCell(c *results.Cell, name results.Figure, k kind) string {
	v, ok := figureValue(c, name)
	if !ok {
		return "n/a"
	}
	if iv, ok := interval(c, name); ok {
		return fmtInterval(iv, k)
	}
	return fmtValue(v, k)
}

// hasCalls reports whether a cell has any successful call, so that its
// per-call figures mean something.
func hasCalls(c *results.Cell) bool { return c.Calls > 0 }

// cellRows builds the side-by-side rows of a group. Rows that apply to no
// cell (first record outside the stream scenario, rates in closed loop)
// are left out.
func cellRows(g *group) []row {
	type def struct {
		label string
		f     func(c *results.Cell) string
	}
	perCall := func(f func(c *results.Cell) string) func(c *results.Cell) string {
		return func(c *results.Cell) string {
			if !hasCalls(c) {
				return "–"
			}
			return f(c)
		}
	}
	fig := func(name results.Figure, k kind) func(c *results.Cell) string {
		return perCall(func(c *results.Cell) string { return figureCell(c, name, k) })
	}
	lat := func(f func(l *results.Latency) float64) func(c *results.Cell) string {
		return perCall(func(c *results.Cell) string { return fmtUS(f(&c.LatencyUS)) })
	}
	defs := []def{
		{"calls", func(c *results.Cell) string { return fmtCount(c.Calls) }},
		{"errors", func(c *results.Cell) string { return fmtErrors(c.Errors, c.ErrorClasses) }},
		{"duration", func(c *results.Cell) string { return fmtSeconds(c.DurationS) }},
		{"connections", func(c *results.Cell) string { return strconv.Itoa(c.Connections) }},
		{"calls/s", fig("calls_per_s", kindRate)},
		{"MB/s", func(c *results.Cell) string { return sig3(c.MBPerS) }},
		{"rate requested", func(c *results.Cell) string {
			if c.RateRequested == 0 {
				return ""
			}
			return fmtRate(c.RateRequested) + "/s"
		}},
		{"rate achieved", func(c *results.Cell) string {
			if c.RateRequested == 0 {
				return ""
			}
			return fmtRate(c.RateAchieved) + "/s"
		}},
		{"late calls", func(c *results.Cell) string {
			if c.RateRequested == 0 {
				return ""
			}
			return fmtCount(c.LateCalls)
		}},
		{"latency p50", fig("latency_us_p50", kindUS)},
		{"latency p90", fig("latency_us_p90", kindUS)},
		{"latency p99", fig("latency_us_p99", kindUS)},
		{"latency p99.9", lat(func(l *results.Latency) float64 { return l.P999 })},
		{"latency max", lat(func(l *results.Latency) float64 { return l.Max })},
		{"uncorrected p50", func(c *results.Cell) string {
			if c.LatencyUncorrectedUS == nil || !hasCalls(c) {
				return ""
			}
			return fmtUS(c.LatencyUncorrectedUS.P50)
		}},
		{"uncorrected p99", func(c *results.Cell) string {
			if c.LatencyUncorrectedUS == nil || !hasCalls(c) {
				return ""
			}
			return fmtUS(c.LatencyUncorrectedUS.P99)
		}},
		{"first record p50", func(c *results.Cell) string {
			if c.FirstRecordUS == nil || !hasCalls(c) {
				return ""
			}
			return fmtUS(c.FirstRecordUS.P50)
		}},
		{"first record p99", func(c *results.Cell) string {
			if c.FirstRecordUS == nil || !hasCalls(c) {
				return ""
			}
			return fmtUS(c.FirstRecordUS.P99)
		}},
		{fmt.Sprintf("time/batch of %d", g.Batch), func(c *results.Cell) string {
			if _, ok := figureValue(c, "batch_ms_mean"); !ok || c.Batches == 0 {
				return "–"
			}
			sd := ""
			if c.BatchMS.Stddev > 0 {
				sd = " ± " + fmtUS(c.BatchMS.Stddev*1e3)
			}
			if iv, ok := interval(c, "batch_ms_mean"); ok {
				return fmtInterval(iv, kindMS) + sd
			}
			return fmtUS(c.BatchMS.Mean*1e3) + sd
		}},
		{"bytes/call sent", fig("bytes_sent_per_call", kindBytes)},
		{"bytes/call received", fig("bytes_received_per_call", kindBytes)},
		{"client CPU/call", fig("client_cpu_us_per_call", kindUS)},
		{"server CPU/call", fig("server_cpu_us_per_call", kindUS)},
	}
	var rows []row
	for _, d := range defs {
		r := row{Label: d.label, Vals: make([]string, len(g.Cells))}
		any := false
		for i, c := range g.Cells {
			r.Vals[i] = d.f(c)
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

// A ratioLine compares one protocol with the baseline: Proto, then Text.
type ratioLine struct {
	Proto string // "gRPC"
	Text  string // "2.98x faster than REST (p50), ..."
}

func (l ratioLine) String() string { return l.Proto + " " + l.Text }

// A ratioItem is one comparison in a ratio line.
type ratioItem struct {
	figure      results.Figure
	higherGood  bool
	good, bad   string // "faster" / "slower"
	suffix      string // " (p50)"
	requireBoth bool
}

// ratioLines sums a group up: every protocol against the baseline (REST
// when present, else the first column), e.g.
// "gRPC 2.98x faster than REST (p50), 2.90x more calls/s, ...".
// With repeats each ratio carries the interval of the paired per-repeat
// ratios, and "~" marks a difference the repeats do not show to be
// significant; notes explains the marks.
func ratioLines(g *group) (lines []ratioLine, notes []string) {
	if len(g.Cells) < 2 {
		return nil, nil
	}
	base := g.Cells[0]
	if !hasCalls(base) {
		return nil, nil
	}
	bytesFig, bytesWord := results.FigBytesReceived, "bytes received"
	if base.BytesPerCall.Sent > base.BytesPerCall.Received {
		bytesFig, bytesWord = "bytes_sent_per_call", "bytes sent"
	}
	items := []ratioItem{
		{figure: "latency_us_p50", good: "faster", bad: "slower", suffix: " (p50)"},
		{figure: "calls_per_s", higherGood: true, good: "more calls/s", bad: "fewer calls/s"},
		{figure: bytesFig, good: "fewer " + bytesWord, bad: "more " + bytesWord},
		{figure: "server_cpu_us_per_call", good: "less server CPU/call", bad: "more server CPU/call"},
	}
	var why string
	for _, c := range g.Cells[1:] {
		if !hasCalls(c) {
			continue
		}
		var parts []string
		tested, insignificant := 0, 0
		for i, it := range items {
			bv, ok1 := figureValue(base, it.figure)
			cv, ok2 := figureValue(c, it.figure)
			if !ok1 || !ok2 || bv <= 0 || cv <= 0 {
				continue
			}
			r := bv / cv
			if it.higherGood {
				r = cv / bv
			}
			word := it.good
			flip := r < 1
			if flip {
				r, word = 1/r, it.bad
			}
			s := fmtRatio(r)
			significant := true
			if ba, ca := paired(base, c, it.figure); len(ba) > 1 {
				num, den := ba, ca
				if it.higherGood {
					num, den = ca, ba
				}
				iv := stats.Summarize(stats.Ratios(num, den))
				lo, hi := iv.Lo, iv.Hi
				if flip {
					lo, hi = 1/hi, 1/lo
				}
				if iv.N > 1 && ratioNum(lo) != ratioNum(hi) {
					s += " [" + ratioNum(lo) + ", " + ratioNum(hi) + "]"
				}
				cmp := stats.Compare(ba, ca)
				tested++
				if !cmp.Significant {
					significant = false
					insignificant++
					if why == "" {
						why = cmp.Note
					}
				}
			}
			s += " " + word
			if i == 0 {
				s += " than " + base.Protocol.Title()
			}
			parts = append(parts, s+it.suffix)
			if !significant {
				parts[len(parts)-1] = strings.TrimSuffix(parts[len(parts)-1], ")") + ", not significant)"
				if it.suffix == "" {
					parts[len(parts)-1] = s + " (not significant)"
				}
			}
		}
		if len(parts) == 0 {
			continue
		}
		if tested > 0 && insignificant == tested {
			// Say it once rather than after every figure.
			for i := range parts {
				parts[i] = strings.Replace(strings.Replace(parts[i], ", not significant)", ")", 1), " (not significant)", "", 1)
			}
			parts[len(parts)-1] += " — not significant"
		}
		lines = append(lines, ratioLine{c.Protocol.Title(), strings.Join(parts, ", ")})
	}
	if len(lines) > 0 && len(base.Repeats) > 1 {
		notes = append(notes, "[lo, hi]: interval of the paired per-repeat ratios")
	}
	if why != "" || hasInsignificant(lines) {
		n := "not significant: the repeats do not show a difference (Mann-Whitney U, α=0.05)"
		if why != "" {
			n += "; " + why
		}
		notes = append(notes, n)
	}
	return lines, notes
}

func hasInsignificant(lines []ratioLine) bool {
	for _, l := range lines {
		if strings.Contains(l.Text, "not significant") {
			return true
		}
	}
	return false
}

// cellWarnings lists a group's cell warnings as "protocol: warning".
func cellWarnings(g *group) []string {
	var out []string
	for _, c := range g.Cells {
		for _, w := range c.Warnings {
			out = append(out, string(c.Protocol)+": "+w)
		}
	}
	return out
}

// envLines describes the run: versions, machine, target, load, repeats,
// timing and why it stopped, as label/value pairs.
func envLines(r *results.Result) [][2]string {
	e, s := &r.Env, &r.Settings
	goexp := e.GoExperiment
	if goexp == "" {
		goexp = "none"
	}
	lines := [][2]string{
		{"meteorbench", e.MeteorbenchVersion},
		{"Go", fmt.Sprintf("%s (GOEXPERIMENT=%s)", e.GoVersion, goexp)},
		{"gRPC, protobuf", e.GRPCVersion + ", " + e.ProtobufVersion},
		{"CPU", fmt.Sprintf("%s · %d CPUs · GOMAXPROCS=%d", orNA(e.CPUModel), e.NumCPU, e.GOMAXPROCS)},
		{"OS", strings.TrimSpace(e.OS + " " + e.Arch)},
	}
	target := e.Target
	if e.OwnServer {
		target += " (own server child, loopback)"
	}
	lines = append(lines, [2]string{"target", target})
	lines = append(lines, [2]string{"plan", planLine(s)})
	lines = append(lines, [2]string{"load", loadLine(s)})
	if s.Repeat > 1 {
		lines = append(lines, [2]string{"repeats", repeatLine(r)})
	}
	run := r.Started.UTC().Format("2006-01-02 15:04:05 MST")
	if !r.Finished.IsZero() && r.Finished.After(r.Started) {
		run += ", took " + fmtSeconds(r.Finished.Sub(r.Started).Seconds())
	}
	lines = append(lines, [2]string{"run", run})
	lines = append(lines, [2]string{"stopped", orNA(r.StopReason)})
	if len(e.Flags) > 0 {
		lines = append(lines, [2]string{"command", strings.Join(e.Flags, " ")})
	}
	return lines
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}

// planLine lists what the run was asked to measure.
func planLine(s *results.Settings) string {
	ints := func(v []int) string {
		parts := make([]string, len(v))
		for i, n := range v {
			parts[i] = strconv.Itoa(n)
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprintf("protocols %s · scenarios %s · batches %s · concurrency %s",
		joinNames(s.Protocols), joinNames(s.Scenarios), ints(s.Batches), ints(s.Concurrency))
}

// loadLine describes the load: mode, bounds, warm-up, timeout, connections.
func loadLine(s *results.Settings) string {
	var parts []string
	if s.Mode == results.ModeOpen {
		m := "open loop"
		if s.Rate > 0 {
			m += " at " + fmtRate(s.Rate) + " calls/s per cell"
		}
		parts = append(parts, m+" (latency from the intended start)")
	} else {
		parts = append(parts, "closed loop")
	}
	if s.DurationS > 0 {
		parts = append(parts, fmtSeconds(s.DurationS)+" per cell")
	}
	if s.Iterations > 0 {
		parts = append(parts, strconv.Itoa(s.Iterations)+" batches per cell")
	}
	parts = append(parts, "warm-up "+fmtSeconds(s.WarmupS))
	if s.TimeoutS > 0 {
		parts = append(parts, "timeout "+fmtSeconds(s.TimeoutS))
	}
	if s.Connections > 0 {
		parts = append(parts, fmt.Sprintf("%d connections per protocol", s.Connections))
	} else {
		parts = append(parts, "connections: gRPC 1, REST 1 per worker")
	}
	return strings.Join(parts, " · ")
}

// repeatLine says how repeated figures read.
func repeatLine(r *results.Result) string {
	conf := 0.0
	for i := range r.Cells {
		for _, iv := range r.Cells[i].CI {
			if iv.Confidence > 0 {
				conf = iv.Confidence
				break
			}
		}
		if conf > 0 {
			break
		}
	}
	s := fmt.Sprintf("%d per cell, interleaved; figures are median [lo, hi]", r.Settings.Repeat)
	if conf > 0 {
		s += fmt.Sprintf(" at %.0f%% confidence", conf*100)
	}
	return s
}

// interruptedBanner is shown at the top of a partial result.
const interruptedBanner = "INTERRUPTED — partial results"

// joinNames lists typed names: "rest, grpc".
func joinNames[T ~string](names []T) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = string(n)
	}
	return strings.Join(parts, ", ")
}
