package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
)

// The capacity document's table, csv and markdown, golden (the run
// fixtures' TestGoldenText does not take it: its tests expect cells).
func TestCapacityGolden(t *testing.T) {
	for _, name := range []string{"capacity", "capacity-repeat"} {
		r := loadFixture(t, name)
		for _, format := range []string{"table", "csv", "markdown"} {
			t.Run(name+"/"+format, func(t *testing.T) {
				golden(t, name+Extension(format), render(t, format, r))
			})
		}
	}
}

// A repeated search (--repeat 3): each series' median with the range of
// its searches and their count, every search's probes under its own
// heading, the verdict comparing medians and saying when the ranges
// overlap; the csv says which search each probe belongs to.
func TestCapacityRepeatFormats(t *testing.T) {
	r := loadFixture(t, "capacity-repeat")
	for _, c := range r.Capacity {
		if len(c.Searches) != 3 || c.RateMin > c.Rate || c.RateMax < c.Rate || c.RateMin == c.RateMax || len(c.Probes) != 0 {
			t.Fatalf("%s: %d searches, %v [%v, %v], %d top probes", c.Protocol, len(c.Searches), c.Rate, c.RateMin, c.RateMax, len(c.Probes))
		}
	}
	if s := r.Verdicts[0].Summary; !strings.Contains(s, "median of 3 searches [") || !strings.HasSuffix(s, "(medians)") {
		t.Errorf("verdict %q", s)
	}
	if s := r.Verdicts[1].Summary; !strings.HasSuffix(s, "(medians; the ranges overlap)") {
		t.Errorf("verdict %q", s)
	}
	for _, format := range []string{"table", "markdown", "html"} {
		out := string(render(t, format, r))
		for _, want := range []string{"searches [min, max]", "calls/s (median)", "3 [", "rest probes, search 2 of 3: ", "grpc probes, search 3 of 3: ", "the target stalled: 4 calls still running"} {
			if !strings.Contains(out, want) && !strings.Contains(out, mdEscape(want)) {
				t.Errorf("%s: lacks %q", format, want)
			}
		}
		if strings.Contains(out, "--repeat 5") {
			t.Errorf("%s: names --repeat 5, which capacity refuses", format)
		}
	}
	recs, col := capacityCSV(t, r)
	n := 0
	for _, c := range r.Capacity {
		for _, s := range c.Searches {
			n += len(s.Probes)
		}
	}
	if len(recs)-1 != n {
		t.Errorf("csv: %d rows, %d probes", len(recs)-1, n)
	}
	if row := recs[len(recs)-1]; row[col["searches"]] != "3" || row[col["search"]] != "3" || row[col["rate_min"]] == "" || row[col["search_rate"]] == "" {
		t.Errorf("last csv row %v", row)
	}
	// The chart draws every search's probes.
	if d := parseSVG(t, render(t, "svg", r)); !d.hasText("rest found 9,452/s") && !d.hasText("rest p99") {
		t.Error("svg: no rest curve")
	}
}

// A capacity document has no cells: every format shows its sections (and
// never "no cells were measured"), the csv one row per probe.
func TestCapacityFormats(t *testing.T) {
	r := loadFixture(t, "capacity")
	for _, format := range []string{"table", "markdown", "html"} {
		out := string(render(t, format, r))
		if strings.Contains(strings.ToLower(out), "no cells were measured") {
			t.Errorf("%s: says no cells were measured", format)
		}
		for _, want := range []string{"small (GetVersion) · p99", "server on 1 CPU", "generator-bound at 3,064 calls/s", "3 of 3", "achieved 10,279 of 10,763 calls/s"} {
			if !strings.Contains(out, want) && !strings.Contains(out, mdEscape(want)) {
				t.Errorf("%s: lacks %q", format, want)
			}
		}
	}
	page := string(render(t, "html", r))
	if strings.Contains(page, "Results by scenario") || !strings.Contains(page, `<table class="cells probes">`) || !strings.Contains(page, "Capacity: latency against offered rate") {
		t.Errorf("html: no capacity tables or chart, or an empty cells section")
	}

	recs, col := capacityCSV(t, r)
	row := 1
	for _, c := range r.Capacity {
		for _, p := range c.Probes {
			got := recs[row]
			if got[col["protocol"]] != string(c.Protocol) || got[col["verdict"]] != p.Verdict || got[col["phase"]] != p.Phase || len(got) != len(CapacityCSVHeader) {
				t.Errorf("csv row %d: %v, want probe %+v of %s", row, got, p, c.Protocol)
			}
			row++
		}
	}
	if row != len(recs) {
		t.Errorf("csv: %d rows, %d probes", len(recs)-1, row-1)
	}
}

// The capacity chart: per protocol the objective's percentile and p50
// against the offered rate, the bound as a horizontal line and the found
// rates marked, one panel per condition; void probes are not drawn.
func TestCapacityChart(t *testing.T) {
	r := loadFixture(t, "capacity")
	d := parseSVG(t, render(t, "svg", r))
	for _, s := range []string{
		"Capacity: latency against offered rate (log-log; dotted: the rate found)",
		"small", "small · server on 1 CPU", "offered calls/s (log)",
		"objective p99<=50ms", "rest p99", "rest p50", "grpc p99", "grpc p50",
		"rest found 9,452/s", "grpc found 6,979/s", "rest found 4,935/s", "grpc ≥ 2,934/s (generator-bound)",
	} {
		if !d.hasText(s) {
			t.Errorf("svg has no text %q", s)
		}
	}
	if d.hasText("no cells were measured") {
		t.Error("svg says no cells were measured")
	}
	for _, p := range []api.Protocol{api.REST, api.GRPC} {
		col := colorHex(protoColor(p))
		// Two panels, each a line and its legend swatch.
		if n := d.countStyle(latencyLine(p) + ";"); n < 4 {
			t.Errorf("%s: %d solid percentile lines", p, n)
		}
		if n := d.countStyle("stroke:" + col + ";stroke-width:1.5;stroke-dasharray:4,2"); n != 4 {
			t.Errorf("%s: %d dashed p50 lines, want 4", p, n)
		}
		if n := d.countStyle("stroke:" + col + ";stroke-dasharray:1,2"); n != 4 {
			t.Errorf("%s: %d found-rate marks, want 4", p, n)
		}
	}
	if n := d.countStyle("stroke:#555555;stroke-width:0.75;stroke-dasharray:2,2"); n != 4 {
		t.Errorf("%d objective lines, want 4 (two panels and legends)", n)
	}
	// The generator-bound series' curve stops below its void rate.
	f := capacityFigure(r)
	for _, s := range capSections(r)[1].Series {
		if s.Protocol != api.GRPC {
			continue
		}
		for _, pt := range capCurve(s, func(l results.Latency) float64 { return l.P99 }) {
			if pt.X >= 3200 {
				t.Errorf("void probe drawn at %v", pt.X)
			}
		}
	}
	if len(f.Panels) != 2 {
		t.Errorf("%d panels", len(f.Panels))
	}
}

// compare reads capacity documents: the found rates old against new per
// series, with their brackets.
func TestCompareCapacity(t *testing.T) {
	old := loadFixture(t, "capacity")
	cur := loadFixture(t, "capacity")
	cur.Capacity[0].Rate, cur.Capacity[0].Lo, cur.Capacity[0].Hi = 10400, 10400, 10900
	cur.Capacity = cur.Capacity[:3] // gRPC on one CPU: not searched
	cmp := Compare(old, cur)
	if len(cmp.Capacity) != 4 {
		t.Fatalf("%d capacity changes", len(cmp.Capacity))
	}
	c0 := cmp.Capacity[0]
	if c0.Key != "small · rest · p99<=50ms" || c0.DeltaPct == nil || c0.Overlap {
		t.Errorf("first change %+v", c0)
	}
	if c1 := cmp.Capacity[1]; c1.DeltaPct == nil || *c1.DeltaPct != 0 || !c1.Overlap {
		t.Errorf("unchanged series %+v", c1)
	}
	if c3 := cmp.Capacity[3]; c3.New != nil || c3.DeltaPct != nil {
		t.Errorf("series only in old %+v", c3)
	}
	var buf bytes.Buffer
	if err := WriteComparison(&buf, "table", cmp); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"Capacity (found calls/s [lo, hi]), old → new:", "9,452 [9,452, 9,870]", "→ 10,400 [10,400, 10,900]", "+10.0%",
		"≥ 2,934 (generator-bound)", "+0.0% (brackets overlap)"} {
		if !strings.Contains(out, want) {
			t.Errorf("compare lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "No cell is in both files") {
		t.Error("compare says no cell is in both files")
	}
	buf.Reset()
	if err := WriteComparison(&buf, "markdown", cmp); err != nil || !strings.Contains(buf.String(), "## Capacity") {
		t.Errorf("markdown: %v\n%s", err, buf.String())
	}
}

// capacityCSV renders r as csv and parses it back, with the header checked
// and each column's index by name.
func capacityCSV(t *testing.T, r *results.Result) ([][]string, map[string]int) {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(render(t, "csv", r))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 || strings.Join(recs[0], ",") != strings.Join(CapacityCSVHeader, ",") {
		t.Fatalf("csv header %v", recs)
	}
	col := map[string]int{}
	for i, h := range CapacityCSVHeader {
		col[h] = i
	}
	return recs, col
}
