package report

import (
	"strconv"

	"github.com/meteorbench/meteorbench/internal/format"
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
	ChangeTest
	// HigherIsBetter is true for throughput, false for costs and latency.
	HigherIsBetter bool `json:"higher_is_better"`
	kind           format.Kind
}

// ChangeTest is the test of a figure's change, old against new, over
// their per-repeat values (stats.Compare). P, OldN and NewN are set when
// both sides have per-repeat values: the change was tested. Without them
// it is a single measurement: untested.
type ChangeTest struct {
	P           *float64 `json:"p,omitempty"`
	OldN        int      `json:"old_n,omitempty"`
	NewN        int      `json:"new_n,omitempty"`
	Significant bool     `json:"significant"`
	// Note explains a missing verdict ("need >= 4 samples ...").
	Note string `json:"note,omitempty"`
}

// testChange tests a figure's change from its per-repeat values old to
// new; repeated says both cells were repeated (so the values are missing,
// not a single measurement).
func testChange(old, new []float64, repeated bool) ChangeTest {
	switch {
	case len(old) > 1 && len(new) > 1:
		c := stats.Compare(old, new)
		return ChangeTest{P: &c.P, OldN: len(old), NewN: len(new), Significant: c.Significant, Note: c.Note}
	case repeated:
		return ChangeTest{Note: "no per-repeat values"}
	}
	return ChangeTest{}
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
		d.ChangeTest = testChange(oc.RepeatValues(fi.Name), nc.RepeatValues(fi.Name), len(oc.Repeats) > 1 && len(nc.Repeats) > 1)
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
