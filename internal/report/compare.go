package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/stats"
)

// CompareSchema names the JSON document of `compare --format json`.
const CompareSchema = "meteorbench-compare/v1"

// CompareFormats are the names WriteComparison accepts.
var CompareFormats = []string{"table", "markdown", "json"}

// Comparison is two result documents compared cell by cell, the cells
// matched by results.Cell.Key.
type Comparison struct {
	Schema string `json:"schema"`
	Old    Side   `json:"old"`
	New    Side   `json:"new"`
	// EnvChanges lists what differs between the two runs' environments and
	// settings (versions, CPU, GOMAXPROCS, load): read deltas in its light.
	EnvChanges []Change `json:"env_changes"`
	// Verdicts are the two runs' verdict summaries side by side, matched by
	// scenario and condition: "" on a side that has no such verdict.
	Verdicts []VerdictChange `json:"verdicts"`
	// Significance is false when a side has no repeats: deltas are then
	// single measurements whose significance is unknown.
	Significance bool         `json:"significance"`
	Cells        []CellChange `json:"cells"`
	OnlyOld      []string     `json:"only_old"` // cell keys measured in old only
	OnlyNew      []string     `json:"only_new"` // cell keys measured in new only
	// Capacity are the capacity searches' found rates, old against new,
	// matched by scenario, protocol, condition and objective (capacity
	// documents); a series searched on one side only has nil on the other.
	Capacity []CapacityChange `json:"capacity,omitempty"`
}

// CapacityChange is one capacity series, old against new.
type CapacityChange struct {
	Key string         `json:"key"` // "small · grpc · p99<=50ms · server on 1 CPU"
	Old *CapacityFound `json:"old"`
	New *CapacityFound `json:"new"`
	// DeltaPct is (new-old)/old of the found rates in percent; nil when a
	// side is missing or found none. Overlap is true when the two brackets
	// overlap: within the search's precision, no change shown.
	DeltaPct *float64 `json:"delta_pct"`
	Overlap  bool     `json:"overlap"`
}

// CapacityFound is what one side's search found.
type CapacityFound struct {
	Rate           float64 `json:"rate"`
	Lo             float64 `json:"lo"`
	Hi             float64 `json:"hi"`
	GeneratorBound float64 `json:"generator_bound,omitempty"`
	Complete       bool    `json:"complete"`
}

// capacityKey names a capacity series across documents.
func capacityKey(c *results.Capacity) string {
	k := string(c.Scenario) + " · " + string(c.Protocol) + " · " + c.Objective
	if f := c.Condition.Features(); f != "" {
		k += " · " + f
	}
	if c.Condition.Concurrency > 0 {
		k += " · " + strconv.Itoa(c.Condition.Concurrency) + " workers"
	}
	return k
}

// compareCapacity pairs the two documents' capacity series, in the old
// document's order, then the new one's own.
func compareCapacity(old, new *results.Result) []CapacityChange {
	var out []CapacityChange
	at := map[string]int{}
	found := func(c *results.Capacity) *CapacityFound {
		return &CapacityFound{Rate: c.Rate, Lo: c.Lo, Hi: c.Hi, GeneratorBound: c.GeneratorBound, Complete: c.Complete}
	}
	for i := range old.Capacity {
		k := capacityKey(&old.Capacity[i])
		at[k] = len(out)
		out = append(out, CapacityChange{Key: k, Old: found(&old.Capacity[i])})
	}
	for i := range new.Capacity {
		k := capacityKey(&new.Capacity[i])
		if j, ok := at[k]; ok {
			out[j].New = found(&new.Capacity[i])
			continue
		}
		out = append(out, CapacityChange{Key: k, New: found(&new.Capacity[i])})
	}
	for i := range out {
		o, n := out[i].Old, out[i].New
		if o == nil || n == nil || o.Rate == 0 || n.Rate == 0 {
			continue
		}
		pct := (n.Rate - o.Rate) / o.Rate * 100
		out[i].DeltaPct = &pct
		// [lo, hi) brackets; an open one (no failure, or generator-bound)
		// reaches up without end.
		top := func(f *CapacityFound) float64 {
			if f.Hi == 0 || f.GeneratorBound > 0 {
				return math.Inf(1)
			}
			return f.Hi
		}
		out[i].Overlap = o.Lo < top(n) && n.Lo < top(o)
	}
	return out
}

// text is one side's found rate: "9,800 [9,500, 10,100]", "≥ 3,200
// (generator-bound)", "none", "–" when not searched.
func (f *CapacityFound) text() string {
	switch {
	case f == nil:
		return "–"
	case f.Rate == 0:
		return "none"
	case f.GeneratorBound > 0:
		return "≥ " + fmtRate(f.Rate) + " (generator-bound)"
	}
	s := fmtRate(f.Rate)
	if f.Hi > 0 {
		s += " [" + fmtRate(f.Lo) + ", " + fmtRate(f.Hi) + "]"
	}
	if !f.Complete {
		s += " (stopped early)"
	}
	return s
}

// deltaText is the change of the found rate: "+6.1%", "+2.0% (brackets
// overlap)", "n/a".
func (c *CapacityChange) deltaText() string {
	if c.DeltaPct == nil {
		return "n/a"
	}
	s := fmt.Sprintf("%+.1f%%", *c.DeltaPct)
	if c.Overlap {
		s += " (brackets overlap)"
	}
	return s
}

// Side describes one of the compared documents.
type Side struct {
	Name        string `json:"name"` // file name, or "old"/"new"
	Started     string `json:"started"`
	Repeat      int    `json:"repeat"`
	Interrupted bool   `json:"interrupted"`
}

// Change is one environment or settings field that differs.
type Change struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

// VerdictChange is one verdict's summary line in the old and the new run.
type VerdictChange struct {
	Key string `json:"key"` // "large · concurrency 4"
	Old string `json:"old"`
	New string `json:"new"`
}

// CellChange is the comparison of one cell present on both sides.
type CellChange struct {
	Key     string        `json:"key"`
	Metrics []MetricDelta `json:"metrics"`
}

// MetricDelta is one figure of a cell, old against new.
type MetricDelta struct {
	Name  results.Figure `json:"name"` // a results.Figures name
	Label string         `json:"label"`
	Old   float64        `json:"old"`
	New   float64        `json:"new"`
	// DeltaPct is (new-old)/old in percent; nil when old is zero.
	DeltaPct *float64 `json:"delta_pct"`
	// P, OldN and NewN are set when both sides have per-repeat values: the
	// change was tested. Without them it is a single measurement: untested.
	P           *float64 `json:"p,omitempty"`
	OldN        int      `json:"old_n,omitempty"`
	NewN        int      `json:"new_n,omitempty"`
	Significant bool     `json:"significant"`
	// Note explains a missing verdict ("need >= 4 samples ...").
	Note string `json:"note,omitempty"`
	// HigherIsBetter is true for throughput, false for costs and latency.
	HigherIsBetter bool `json:"higher_is_better"`
	kind           kind
}

// Compare compares old and new cell by cell. Significance comes from the
// per-repeat figures (stats.Compare, a Mann-Whitney U test) when both
// sides have repeats; otherwise Significance is false. Name the sides by
// setting Old.Name and New.Name on the result.
func Compare(old, new *results.Result) *Comparison {
	cmp := &Comparison{
		Schema:       CompareSchema,
		Old:          side("old", old),
		New:          side("new", new),
		EnvChanges:   envChanges(old, new),
		Verdicts:     verdictChanges(old, new),
		Significance: hasRepeats(old) && hasRepeats(new),
		OnlyOld:      []string{},
		OnlyNew:      []string{},
		Capacity:     compareCapacity(old, new),
	}
	newCells := map[string]*results.Cell{}
	for i := range new.Cells {
		newCells[new.Cells[i].Key()] = &new.Cells[i]
	}
	seen := map[string]bool{}
	for _, g := range groupCells(old) {
		for _, oc := range g.Cells {
			key := oc.Key()
			nc := newCells[key]
			if nc == nil {
				cmp.OnlyOld = append(cmp.OnlyOld, key)
				continue
			}
			seen[key] = true
			cmp.Cells = append(cmp.Cells, compareCell(oc, nc))
		}
	}
	for _, g := range groupCells(new) {
		for _, nc := range g.Cells {
			if !seen[nc.Key()] {
				cmp.OnlyNew = append(cmp.OnlyNew, nc.Key())
			}
		}
	}
	return cmp
}

func side(name string, r *results.Result) Side {
	return Side{Name: name, Started: r.Started.UTC().Format("2006-01-02 15:04:05 MST"), Repeat: r.Settings.Repeat, Interrupted: r.Interrupted}
}

func hasRepeats(r *results.Result) bool {
	for i := range r.Cells {
		if len(r.Cells[i].Repeats) > 1 {
			return true
		}
	}
	return false
}

func compareCell(oc, nc *results.Cell) CellChange {
	cc := CellChange{Key: oc.Key()}
	for _, fi := range results.Figures() {
		ov, ok1 := oc.Figure(fi.Name)
		nv, ok2 := nc.Figure(fi.Name)
		if !ok1 || !ok2 {
			continue
		}
		d := MetricDelta{Name: fi.Name, Label: fi.Label, Old: ov, New: nv, HigherIsBetter: fi.HigherIsBetter, kind: kindOf(fi.Name)}
		if ov != 0 {
			pct := (nv - ov) / ov * 100
			d.DeltaPct = &pct
		}
		ovs, nvs := oc.RepeatValues(fi.Name), nc.RepeatValues(fi.Name)
		switch {
		case len(ovs) > 1 && len(nvs) > 1:
			c := stats.Compare(ovs, nvs)
			p := c.P
			d.P, d.OldN, d.NewN, d.Significant, d.Note = &p, len(ovs), len(nvs), c.Significant, c.Note
		case len(oc.Repeats) > 1 && len(nc.Repeats) > 1:
			d.Note = "no per-repeat values"
		}
		cc.Metrics = append(cc.Metrics, d)
	}
	return cc
}

// verdictKey names a verdict across runs: "large · concurrency 4".
func verdictKey(v *results.Verdict) string {
	return string(v.Scenario) + " · " + v.Condition.Label()
}

// verdictChanges pairs the two runs' verdicts by scenario and condition,
// in the old run's order, then the new run's own.
func verdictChanges(old, new *results.Result) []VerdictChange {
	out := []VerdictChange{}
	at := map[string]int{}
	for i := range old.Verdicts {
		k := verdictKey(&old.Verdicts[i])
		at[k] = len(out)
		out = append(out, VerdictChange{Key: k, Old: old.Verdicts[i].Summary})
	}
	for i := range new.Verdicts {
		k := verdictKey(&new.Verdicts[i])
		if j, ok := at[k]; ok {
			out[j].New = new.Verdicts[i].Summary
			continue
		}
		out = append(out, VerdictChange{Key: k, New: new.Verdicts[i].Summary})
	}
	return out
}

// envChanges lists the environment and settings fields that differ.
func envChanges(old, new *results.Result) []Change {
	oe, ne := &old.Env, &new.Env
	oset, nset := &old.Settings, &new.Settings
	fields := []struct {
		name     string
		old, new string
	}{
		{"meteorbench", oe.MeteorbenchVersion, ne.MeteorbenchVersion},
		{"Go", oe.GoVersion, ne.GoVersion},
		{"GOEXPERIMENT", oe.GoExperiment, ne.GoExperiment},
		{"gRPC", oe.GRPCVersion, ne.GRPCVersion},
		{"protobuf", oe.ProtobufVersion, ne.ProtobufVersion},
		{"CPU", oe.CPUModel, ne.CPUModel},
		{"CPUs", strconv.Itoa(oe.NumCPU), strconv.Itoa(ne.NumCPU)},
		{"GOMAXPROCS", strconv.Itoa(oe.GOMAXPROCS), strconv.Itoa(ne.GOMAXPROCS)},
		{"pinned CPUs", oe.ServerCPUs + "/" + oe.ClientCPUs, ne.ServerCPUs + "/" + ne.ClientCPUs},
		{"OS", oe.OS + " " + oe.Arch, ne.OS + " " + ne.Arch},
		{"target", oe.Target, ne.Target},
		{"own server", strconv.FormatBool(oe.OwnServer), strconv.FormatBool(ne.OwnServer)},
		{"plan", planLine(oset), planLine(nset)},
		{"load", loadLine(oset), loadLine(nset)},
		{"repeats", strconv.Itoa(oset.Repeat), strconv.Itoa(nset.Repeat)},
		{"stopped", old.Stop.String(), new.Stop.String()},
	}
	out := []Change{}
	for _, f := range fields {
		// A server the run started itself listens on a random port: its
		// address is no setting.
		if f.name == "target" && oe.OwnServer && ne.OwnServer {
			continue
		}
		if f.old != f.new {
			out = append(out, Change{Field: f.name, Old: orNA(f.old), New: orNA(f.new)})
		}
	}
	return out
}

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
			tw := tabwriter.NewWriter(ew, 0, 8, 2, ' ', 0)
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
				ew.printf("| %s | %s | %s | %s | %s |\n", esc(m.Label), esc(fmtValue(m.Old, m.kind)), esc(fmtValue(m.New, m.kind)),
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
			fmt.Fprintf(tw, "  %-*s\t%s\t%s\t%s\t%s\t  %s\n", width, m.Label, fmtValue(m.Old, m.kind), fmtValue(m.New, m.kind), m.deltaText(), p, m.verdict())
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

// compareCapacityText prints the capacity series' found rates, old and new,
// with their brackets and the change.
func compareCapacityText(ew *errWriter, cmp *Comparison, md bool, esc func(string) string) {
	if len(cmp.Capacity) == 0 {
		return
	}
	if md {
		ew.printf("\n## Capacity (found calls/s [lo, hi])\n\n| | old | new | delta |\n|:--|--:|--:|--:|\n")
		for _, c := range cmp.Capacity {
			ew.printf("| %s | %s | %s | %s |\n", esc(c.Key), esc(c.Old.text()), esc(c.New.text()), esc(c.deltaText()))
		}
		return
	}
	ew.printf("\nCapacity (found calls/s [lo, hi]), old → new:\n")
	tw := tabwriter.NewWriter(ew, 0, 8, 2, ' ', 0)
	for _, c := range cmp.Capacity {
		fmt.Fprintf(tw, "  %s\t%s\t→ %s\t%s\n", c.Key, c.Old.text(), c.New.text(), c.deltaText())
	}
	tw.Flush()
}
