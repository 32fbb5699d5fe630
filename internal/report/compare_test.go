package report

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/internal/results"
)

func cellByKey(r *results.Result, key string) *results.Cell {
	for i := range r.Cells {
		if r.Cells[i].Key() == key {
			return &r.Cells[i]
		}
	}
	return nil
}

func metric(t *testing.T, cc *CellChange, name results.Figure) *MetricDelta {
	t.Helper()
	for i := range cc.Metrics {
		if cc.Metrics[i].Name == name {
			return &cc.Metrics[i]
		}
	}
	t.Fatalf("%s: no metric %s", cc.Key, name)
	return nil
}

func compareFixtures(t *testing.T) (old, cur *results.Result, cmp *Comparison) {
	old, cur = loadFixture(t, "compare-old"), loadFixture(t, "compare-new")
	cmp = Compare(old, cur)
	cmp.Old.Name, cmp.New.Name = "compare-old.json", "compare-new.json"
	return old, cur, cmp
}

func TestCompareMatchesCells(t *testing.T) {
	old, cur, cmp := compareFixtures(t)
	var both, onlyOld, onlyNew []string
	for i := range old.Cells {
		if cellByKey(cur, old.Cells[i].Key()) != nil {
			both = append(both, old.Cells[i].Key())
		} else {
			onlyOld = append(onlyOld, old.Cells[i].Key())
		}
	}
	for i := range cur.Cells {
		if cellByKey(old, cur.Cells[i].Key()) == nil {
			onlyNew = append(onlyNew, cur.Cells[i].Key())
		}
	}
	var got []string
	for _, c := range cmp.Cells {
		got = append(got, c.Key)
	}
	for _, s := range [][]string{both, got, onlyOld, onlyNew, cmp.OnlyOld, cmp.OnlyNew} {
		sort.Strings(s)
	}
	if strings.Join(got, " ") != strings.Join(both, " ") || len(both) != 4 {
		t.Errorf("matched %v, want %v", got, both)
	}
	if strings.Join(cmp.OnlyOld, " ") != strings.Join(onlyOld, " ") || strings.Join(cmp.OnlyNew, " ") != strings.Join(onlyNew, " ") ||
		!strings.Contains(strings.Join(onlyOld, " "), "post/rest/b100/c4") || !strings.Contains(strings.Join(onlyNew, " "), "stream/grpc/b100/c4") {
		t.Errorf("only old %v (want %v), only new %v (want %v)", cmp.OnlyOld, onlyOld, cmp.OnlyNew, onlyNew)
	}
}

func TestCompareDeltas(t *testing.T) {
	old, cur, cmp := compareFixtures(t)
	if !cmp.Significance {
		t.Fatal("both sides have repeats: want significance")
	}
	for _, cc := range cmp.Cells {
		oc, nc := cellByKey(old, cc.Key), cellByKey(cur, cc.Key)
		for _, m := range cc.Metrics {
			ov, _ := oc.Figure(m.Name)
			nv, _ := nc.Figure(m.Name)
			if m.Old != ov || m.New != nv || m.DeltaPct == nil || math.Abs(*m.DeltaPct-(nv-ov)/ov*100) > 1e-9 {
				t.Errorf("%s %s: old %v new %v delta %v; cells say %v -> %v", cc.Key, m.Name, m.Old, m.New, m.DeltaPct, ov, nv)
			}
			if m.Name != "latency_us_p999" && (m.P == nil || m.OldN != 5 || m.NewN != 5) {
				t.Errorf("%s %s: want a p-value over 5+5 repeats, got %+v", cc.Key, m.Name, m)
			}
		}
	}
	byKey := map[string]*CellChange{}
	for i := range cmp.Cells {
		byKey[cmp.Cells[i].Key] = &cmp.Cells[i]
	}
	// The new side's gRPC large-payload path is 30% faster, 25% cheaper:
	// clearly significant over 5+5 repeats.
	g := byKey["large/grpc/b100/c4"]
	for _, name := range []results.Figure{"latency_us_p50", "calls_per_s", "server_cpu_us_per_call"} {
		m := metric(t, g, name)
		if !m.Significant || m.verdict() != "better" {
			t.Errorf("large/grpc %s: %+v, want a significant improvement", name, m)
		}
	}
	if p50 := metric(t, g, "latency_us_p50"); *p50.DeltaPct > -25 || *p50.DeltaPct < -35 {
		t.Errorf("large/grpc p50 delta %.1f%%, the fixture made it about -30%%", *p50.DeltaPct)
	}
	if cpu := metric(t, g, "server_cpu_us_per_call"); *cpu.DeltaPct > -20 || *cpu.DeltaPct < -30 {
		t.Errorf("large/grpc server CPU delta %.1f%%, the fixture made it about -25%%", *cpu.DeltaPct)
	}
	// Unchanged cells: the same model with other noise, never significant.
	for _, key := range []string{"small/rest/b100/c4", "small/grpc/b100/c4", "large/rest/b100/c4"} {
		for _, m := range byKey[key].Metrics {
			if m.Significant {
				t.Errorf("%s %s significant (p=%v) though unchanged", key, m.Name, *m.P)
			}
			if m.P != nil && m.deltaText() != "~" {
				t.Errorf("%s %s: delta %q, want ~", key, m.Name, m.deltaText())
			}
		}
	}
	fields := map[string]Change{}
	for _, c := range cmp.EnvChanges {
		fields[c.Field] = c
	}
	if fields["Go"].New != "go1.27.0" || fields["GOMAXPROCS"].Old != "2" || fields["GOMAXPROCS"].New != "4" || fields["CPU"].New == "" {
		t.Errorf("env changes %+v", cmp.EnvChanges)
	}
	if _, ok := fields["gRPC"]; ok {
		t.Error("gRPC version reported as changed")
	}
}

func TestCompareOutput(t *testing.T) {
	_, _, cmp := compareFixtures(t)
	var buf bytes.Buffer
	if err := WriteComparison(&buf, "table", cmp); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	golden(t, "compare.txt", buf.Bytes())
	sec := out[strings.Index(out, "large/grpc/b100/c4"):]
	sec = sec[:strings.Index(sec, "\n\n")]
	for _, line := range strings.Split(sec, "\n") {
		if strings.Contains(line, "latency p50") && !(strings.Contains(line, "%") && strings.Contains(line, "p=0.008 n=5+5") && strings.HasSuffix(line, "better")) {
			t.Errorf("large/grpc p50 line: %q", line)
		}
	}
	small := out[strings.Index(out, "small/rest/b100/c4"):]
	small = small[:strings.Index(small, "\n\n")]
	if !strings.Contains(small, "      ~  (p=") {
		t.Errorf("unchanged cell without ~:\n%s", small)
	}
	for _, want := range []string{"GOMAXPROCS  2 → 4", "Only in old (compare-old.json):\n  - post/rest/b100/c4", "Only in new (compare-new.json):"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	// Both runs started their own server on a random port: no change.
	if strings.Contains(out, "target") {
		t.Errorf("own server's port listed as a changed setting:\n%s", out)
	}
	// The "~" footnote once, at the end, not after every cell.
	if n := strings.Count(out, "~: no significant change"); n != 1 || strings.Index(out, "~: ") < strings.LastIndex(out, "(p=") {
		t.Errorf("~ footnote %d times or before the last cell:\n%s", n, out)
	}
	// The verdicts first, old over new, matched by scenario and condition.
	verdicts := out[:strings.Index(out, "Environment and settings")]
	for _, v := range cmp.Verdicts {
		if v.Old != "" && v.New != "" && !strings.Contains(verdicts, "  old  "+v.Old+"\n  new  "+v.New+"\n") {
			t.Errorf("verdict %s not old over new:\n%s", v.Key, verdicts)
		}
	}
	for _, want := range []string{"  old  post: gRPC", "  new  (no verdict for post · concurrency 4)\n", "  old  (no verdict for stream · concurrency 4)\n  new  stream: gRPC"} {
		if !strings.Contains(verdicts, want) {
			t.Errorf("want %q in:\n%s", want, verdicts)
		}
	}
	if len(cmp.Verdicts) != 4 {
		t.Errorf("%d verdict pairs, want small, large, post, stream", len(cmp.Verdicts))
	}

	buf.Reset()
	if err := WriteComparison(&buf, "markdown", cmp); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.md", buf.Bytes())

	buf.Reset()
	if err := WriteComparison(&buf, "json", cmp); err != nil {
		t.Fatal(err)
	}
	var back Comparison
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Schema != CompareSchema || len(back.Cells) != len(cmp.Cells) || len(back.OnlyOld) != 2 || !back.Significance {
		t.Errorf("json: %+v", back)
	}
	if err := WriteComparison(&buf, "html", cmp); err == nil {
		t.Error("unknown compare format: no error")
	}
}

func TestCompareWithoutRepeats(t *testing.T) {
	old, cur := loadFixture(t, "basic"), loadFixture(t, "basic")
	c := cellByKey(cur, "large/grpc/b100/c4")
	c.CallsPerS *= 1.10
	c.LatencyUS.P50 *= 0.8
	cmp := Compare(old, cur)
	if cmp.Significance || len(cmp.EnvChanges) != 0 || len(cmp.OnlyOld)+len(cmp.OnlyNew) != 0 || len(cmp.Cells) != len(old.Cells) {
		t.Fatalf("same run compared: %+v", cmp)
	}
	var buf bytes.Buffer
	if err := WriteComparison(&buf, "table", cmp); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "Same environment and settings.") {
		t.Errorf("want the same environment:\n%s", out[:300])
	}
	// Untested deltas carry the mark, explained once at the end.
	sec := out[strings.Index(out, "large/grpc/b100/c4"):]
	sec = sec[:strings.Index(sec, "\n\n")]
	if !strings.Contains(sec, "+10.0%†") || !strings.Contains(sec, "-20.0%†") || strings.Contains(sec, "~") || strings.Contains(sec, "p=") {
		t.Errorf("deltas without repeats:\n%s", sec)
	}
	if n := strings.Count(out, "†: untested: single measurement"); n != 1 {
		t.Errorf("untested footnote %d times, want once:\n%s", n, out)
	}
	if strings.Contains(out, "~:") {
		t.Error("~ footnote without a ~ delta")
	}
}
