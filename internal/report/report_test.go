package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"html"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/format"
	goldenfile "github.com/meteorbench/meteorbench/internal/golden"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/stats"
)

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", "golden", name), got, *update)
}

var reportFixtures = []string{"basic", "repeats", "interrupted", "openloop", "records", "fit", "mix"}

func render(t *testing.T, format string, r *results.Result) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, format, r); err != nil {
		t.Fatalf("Write(%s): %v", format, err)
	}
	return buf.Bytes()
}

func TestGoldenText(t *testing.T) {
	for _, name := range reportFixtures {
		r := loadFixture(t, name)
		for _, format := range []string{"table", "csv", "markdown"} {
			t.Run(name+"/"+format, func(t *testing.T) {
				golden(t, name+Extension(format), render(t, format, r))
			})
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	for _, name := range fixtureNames() {
		t.Run(name, func(t *testing.T) {
			r := loadFixture(t, name)
			back, err := results.Read(bytes.NewReader(render(t, "json", r)))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r, back) {
				t.Errorf("json output does not read back to the same Result")
			}
		})
	}
}

func TestWriteErrors(t *testing.T) {
	r := loadFixture(t, "basic")
	var buf bytes.Buffer
	err := Write(&buf, "yaml", r)
	if err == nil || !strings.Contains(err.Error(), `unknown format "yaml"`) || !strings.Contains(err.Error(), "markdown") {
		t.Errorf("unknown format: err = %v", err)
	}
	if buf.Len() != 0 {
		t.Errorf("unknown format wrote %d bytes", buf.Len())
	}
	if err := Write(&buf, "table", nil); err == nil {
		t.Error("nil result: no error")
	}
	for _, f := range Formats {
		if err := CheckFormat(f); err != nil {
			t.Errorf("CheckFormat(%q) = %v", f, err)
		}
		if Extension(f) == "" {
			t.Errorf("Extension(%q) empty", f)
		}
		if got, ok := FormatForPath("out" + Extension(f)); f != "table" && (!ok || got != f) {
			t.Errorf("FormatForPath(%q) = %q, %v", "out"+Extension(f), got, ok)
		}
	}
	if _, ok := FormatForPath("out.xyz"); ok {
		t.Error("FormatForPath(.xyz) ok")
	}
	if !Binary("png") || Binary("svg") {
		t.Error("Binary: only png is binary")
	}
}

// An empty run (interrupted before the first cell) still renders.
func TestEmptyResult(t *testing.T) {
	r := loadFixture(t, "interrupted")
	r.Cells = nil
	for _, f := range Formats {
		if f == "png" || f == "svg" || f == "html" {
			continue // charts are tested in chart_test.go
		}
		out := render(t, f, r)
		if f == "table" && !strings.Contains(string(out), "no cells were measured") {
			t.Errorf("table of an empty run:\n%s", out)
		}
	}
}

func TestCSV(t *testing.T) {
	for _, name := range reportFixtures {
		r := loadFixture(t, name)
		recs, err := csv.NewReader(bytes.NewReader(render(t, "csv", r))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if r.FitPlan != nil { // a fit document: one row per protocol of the answer
			if !reflect.DeepEqual(recs[0], FitCSVHeader) || len(recs) != len(r.Fit)+1 {
				t.Fatalf("%s: header %v, %d rows for %d protocols", name, recs[0], len(recs)-1, len(r.Fit))
			}
			continue
		}
		if !reflect.DeepEqual(recs[0], CSVHeader) {
			t.Fatalf("%s: header %v", name, recs[0])
		}
		if len(recs) != len(r.Cells)+1 {
			t.Fatalf("%s: %d rows for %d cells", name, len(recs)-1, len(r.Cells))
		}
		col := map[string]int{}
		for i, h := range CSVHeader {
			col[h] = i
		}
		for i, rec := range recs[1:] {
			c := &r.Cells[i]
			num := func(h string) float64 {
				v, err := strconv.ParseFloat(rec[col[h]], 64)
				if err != nil {
					t.Fatalf("%s row %d %s: %v", name, i, h, err)
				}
				return v
			}
			if rec[col["protocol"]] != string(c.Protocol) || rec[col["scenario"]] != string(c.Scenario) || num("calls") != float64(c.Calls) ||
				num("latency_p99_us") != c.LatencyUS.P99 || num("bytes_received_per_call") != c.BytesPerCall.Received {
				t.Errorf("%s row %d does not match cell %s: %v", name, i, c.Key(), rec)
			}
			if got := rec[col["server_cpu_us_per_call"]]; (c.ServerCPUUSPerCall == nil) != (got == "") {
				t.Errorf("%s row %d: server CPU %q for %v", name, i, got, c.ServerCPUUSPerCall)
			}
			if got := rec[col["rate_requested"]]; (c.RateRequested == 0) != (got == "") {
				t.Errorf("%s row %d: rate_requested %q", name, i, got)
			}
			if got := rec[col["decode_mean_us"]]; (c.DecodeUS == nil) != (got == "") || (got != "" && num("decode_mean_us") != c.DecodeUS.Mean) {
				t.Errorf("%s row %d: decode_mean_us %q for %v", name, i, got, c.DecodeUS)
			}
			if got := rec[col["stop_reason"]]; got != string(c.StopReason) {
				t.Errorf("%s row %d: stop_reason %q, cell %q", name, i, got, c.StopReason)
			}
		}
	}
}

// section returns the table block of the group whose title contains head.
func section(t *testing.T, out, head string) string {
	t.Helper()
	i := strings.Index(out, head)
	if i < 0 {
		t.Fatalf("no section %q in:\n%s", head, out)
	}
	s := out[i:]
	if j := strings.Index(s[1:], "\n== "); j >= 0 {
		s = s[:j+1]
	}
	return s
}

// The summary comes first, after the environment: every verdict's line,
// as analysis wrote it, in every text format.
func TestSummaryFirst(t *testing.T) {
	for _, name := range reportFixtures {
		r := loadFixture(t, name)
		if len(r.Verdicts) == 0 {
			t.Fatalf("%s: fixture without verdicts", name)
		}
		for _, format := range []string{"table", "markdown", "html"} {
			out := string(render(t, format, r))
			if format == "html" {
				out = html.UnescapeString(out)
			}
			esc := func(s string) string { return s }
			if format == "markdown" {
				esc = mdEscape
			}
			first := strings.Index(out, esc(r.Verdicts[0].Summary))
			if first < 0 {
				t.Errorf("%s %s: no summary line %q", name, format, r.Verdicts[0].Summary)
				continue
			}
			for _, head := range []string{"command", "== small", "## small", "<h3>small"} {
				if i := strings.Index(out, head); i >= 0 && (i < first) != (head == "command") {
					t.Errorf("%s %s: summary at %d, %q at %d: want it after the environment, before the sections", name, format, first, head, i)
				}
			}
			for _, v := range r.Verdicts {
				if want := esc(v.Summary); strings.Count(out, want) != 1 {
					t.Errorf("%s %s: summary %q %d times, want once", name, format, v.Summary, strings.Count(out, want))
				}
			}
		}
	}
}

// Reporters only format: they show the verdicts the document carries,
// hand-made here, and compute none when it has none.
func TestVerdictsOnlyFormatted(t *testing.T) {
	r := loadFixture(t, "basic")
	lo, hi := 3.6, 4.4
	r.Verdicts = []results.Verdict{{
		Scenario: api.Large, Condition: results.Condition{Concurrency: 4}, Batches: []int{100, 200}, Baseline: api.REST,
		Summary: "large: made up 3.9x [3.6, 4.4] more calls/s",
		Versus: []results.Versus{{Protocol: api.GRPC, Ratios: []results.Ratio{
			{Figure: results.FigCallsPerS, Ratio: 3.9, Better: true, Lo: &lo, Hi: &hi, N: 2, Significance: results.Untested},
		}}},
		Notes: []string{"a hand-made note"},
	}}
	out := string(render(t, "table", r))
	if !strings.Contains(out, "== summary ==\nlarge: made up 3.9x [3.6, 4.4] more calls/s\n   · a hand-made note\n· each verdict pools batches 100, 200\n") {
		t.Errorf("summary not as given:\n%s", out)
	}
	if n := strings.Count(out, "=> "); n != 1 {
		t.Errorf("%d ratio lines, want the one verdict's one protocol", n)
	}
	if sec := section(t, out, "large (GetLargePayloadAsList) · batch 200"); !strings.Contains(sec, "=> gRPC against REST: 3.9x [3.6, 4.4] more calls/s\n") {
		t.Errorf("verdict ratios not under the verdict's last group:\n%s", sec)
	}
	if sec := section(t, out, "large (GetLargePayloadAsList) · batch 100"); strings.Contains(sec, "=>") {
		t.Errorf("verdict repeated under every batch:\n%s", sec)
	}

	r.Verdicts = nil // an older document
	for _, format := range []string{"table", "markdown", "html"} {
		out := string(render(t, format, r))
		if strings.Contains(out, "=>") || strings.Contains(out, "against REST") || strings.Contains(out, "ummary<") || strings.Contains(out, "ummary ==") || strings.Contains(out, "# Summary") {
			t.Errorf("%s of a document without verdicts shows some:\n%.400s", format, out)
		}
	}
}

func TestTableVerdictRatios(t *testing.T) {
	r := loadFixture(t, "basic")
	out := string(render(t, "table", r))
	for _, v := range r.Verdicts {
		head := fmt.Sprintf("%s · batch %d · %s", v.Scenario.Title(), v.Batches[len(v.Batches)-1], v.Condition.Label())
		sec := section(t, out, head)
		for _, vs := range v.Versus {
			if want := "=> " + analysis.Line(v.Baseline, vs) + "\n"; !strings.Contains(sec, want) {
				t.Errorf("want %q in:\n%s", want, sec)
			}
		}
		// Protocols side by side, REST first.
		if !regexpHeader(sec, "rest", "grpc") {
			t.Errorf("header not rest | grpc:\n%s", sec)
		}
	}
	// Every verdict pools batches 100 and 200: said once, in the summary.
	if n := strings.Count(out, "pools batches 100, 200"); n != 1 || strings.Contains(out, "verdict over batches") {
		t.Errorf("pooled batches said %d times", n)
	}
	// Single measurements: the summary says once that nothing was tested.
	if n := strings.Count(out, "untested: ratios from single measurements"); n != 1 {
		t.Errorf("untested footnote %d times, want once", n)
	}
	// The stream scenario shows time to first record; adapters that report
	// them show the time to the last byte and the client's decode time.
	sec := section(t, out, "stream (GetLargePayload, streamed) · batch 100")
	for _, want := range []string{"first record p50", "last byte p50", "client decode/call"} {
		if !strings.Contains(sec, want) {
			t.Errorf("stream: no %q row:\n%s", want, sec)
		}
	}
}

func regexpHeader(sec string, protos ...string) bool {
	lines := strings.Split(sec, "\n")
	if len(lines) < 2 {
		return false
	}
	return reflect.DeepEqual(strings.Fields(lines[1]), protos)
}

func TestTableRepeats(t *testing.T) {
	out := string(render(t, "table", loadFixture(t, "repeats")))
	sec := section(t, out, "large (GetLargePayloadAsList) · batch 100")
	if !regexpHeader(sec, "rest", "rest-protobuf", "grpc") {
		t.Errorf("want three columns:\n%s", sec)
	}
	// Three repeats of two batch sizes pool into six samples: tested, and
	// the footnote on what "within noise" means is said once.
	if n := strings.Count(out, "within noise (±N%): the repeats do not show a difference"); n != 1 || !strings.Contains(out, "p50 within noise (±") {
		t.Errorf("K=3: the not-significant footnote %d times, want once:\n%s", n, out)
	}

	// One batch size of three repeats cannot be tested: every verdict says
	// so, the summary says it once.
	r := loadFixture(t, "repeats")
	var cells []results.Cell
	for _, c := range r.Cells {
		if c.Batch == 100 {
			cells = append(cells, c)
		}
	}
	r.Cells = cells
	analysis.Apply(r)
	out = string(render(t, "table", r))
	if n := strings.Count(out, "3 repeats: too few to test, use --repeat 5"); n != 1 {
		t.Errorf("K=3, one batch: the too-few note %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "x [") {
		t.Errorf("want ratio intervals:\n%s", out)
	}
	if !strings.Contains(out, "figures are median [lo, hi] at 75% confidence") {
		t.Errorf("header does not explain intervals")
	}
}

func TestTableInterrupted(t *testing.T) {
	out := string(render(t, "table", loadFixture(t, "interrupted")))
	if !strings.HasPrefix(out, "*** INTERRUPTED — partial results") {
		t.Errorf("banner not first:\n%s", out[:min(200, len(out))])
	}
	sec := section(t, out, "large (GetLargePayloadAsList) · batch 100")
	for _, want := range []string{
		"39 (deadline_exceeded 37, http_503 2)",
		"!  rest: 39 calls failed",
		"!  grpc: server CPU unknown",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("want %q under its cell:\n%s", want, sec)
		}
	}
	if !strings.Contains(sec, "n/a") {
		t.Errorf("unknown server CPU not shown as n/a:\n%s", sec)
	}
	// The first message of each error class, on one line, truncated.
	sec = section(t, out, "small (GetVersion) · batch 200")
	want := "!  grpc: invalid-response ×1,000: record 3: id 7 does not match the data set: want {\"name\":\"Aarhus\",\"id\":\"7\",\" ...\n"
	if !strings.Contains(sec, want) {
		t.Errorf("want %q in:\n%s", want, sec)
	}
	sec = section(t, out, "large (GetLargePayloadAsList) · batch 200")
	if !regexpHeader(sec, "rest") {
		t.Errorf("want a lone rest column:\n%s", sec)
	}
	if !regexp.MustCompile(`\nstopped +interrupted\n`).MatchString(sec) {
		t.Errorf("the cell's stop reason is not shown:\n%s", sec)
	}
}

func TestTableOpenLoop(t *testing.T) {
	out := string(render(t, "table", loadFixture(t, "openloop")))
	for _, want := range []string{"open loop at 200 calls/s per cell", "· open loop at 200 calls/s ==", "rate requested", "rate achieved", "late calls", "uncorrected p99"} {
		if !strings.Contains(out, want) {
			t.Errorf("open loop: want %q", want)
		}
	}
	// No time per batch in open loop; no last-byte or decode row from an
	// adapter that reports neither.
	sections := out[strings.Index(out, "\n== small"):]
	for _, absent := range []string{"time/batch", "last byte", "decode", "\nstopped "} {
		if strings.Contains(sections, absent) {
			t.Errorf("open loop: row %q shown", absent)
		}
	}
	if strings.Contains(string(render(t, "table", loadFixture(t, "basic"))), "rate requested") {
		t.Error("closed loop shows rate rows")
	}
}

func TestMarkdown(t *testing.T) {
	out := string(render(t, "markdown", loadFixture(t, "interrupted")))
	if !strings.Contains(out, "> **INTERRUPTED — partial results**") {
		t.Error("no interrupted banner")
	}
	// Every table row has as many cells as its header.
	var cols int
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "|") {
			cols = 0
			continue
		}
		n := strings.Count(strings.ReplaceAll(l, `\|`, ""), "|")
		if cols == 0 {
			cols = n
		} else if n != cols {
			t.Errorf("row with %d separators, header %d: %q", n, cols, l)
		}
	}
	if !strings.Contains(out, "- ⚠ rest: 39 calls failed") {
		t.Error("cell warning missing")
	}
}

func TestFormatHelpers(t *testing.T) {
	cases := []struct{ got, want string }{
		{truncate("abcdefghij", 8), "abcd ..."},
		{truncate("abcdefgh", 8), "abcdefgh"},
		{oneLine("a\n  b\tc"), "a b c"},
		{plural(1, "CPU", "CPUs"), "1 CPU"},
		{plural(2, "CPU", "CPUs"), "2 CPUs"},
		{fmtErrors(4, results.ErrorCounts{"b": 1, "a": 1, "c": 2}), "4 (c 2, a 1, b 1)"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// A repeat too short to complete one batch has no time per batch: it is
// left out of the median and the interval, never shown as 0 ms.
func TestBatchTimeWithoutCompletedBatches(t *testing.T) {
	r := loadFixture(t, "repeats")
	var c *results.Cell
	for i := range r.Cells {
		if r.Cells[i].Key() == "large/grpc/b100/c4" {
			c = &r.Cells[i]
		}
	}
	delete(c.Repeats[0], results.FigBatchMS)
	iv := c.CI["batch_ms_mean"]
	iv.Lo = 0
	c.CI["batch_ms_mean"] = iv
	iv = stats.Summarize([]float64{c.Repeats[1]["batch_ms_mean"], c.Repeats[2]["batch_ms_mean"]})
	want := format.Interval(iv.Median, iv.Lo, iv.Hi, format.KindMS)
	sec := section(t, string(render(t, "table", r)), "large (GetLargePayloadAsList) · batch 100")
	if !strings.Contains(sec, want) || strings.Contains(sec, "[0,") {
		t.Errorf("want time per batch %q without the empty repeat:\n%s", want, sec)
	}

	// No batch at all: a dash, and no bar.
	c.Batches, c.BatchMS = 0, results.Spread{}
	for _, s := range c.Repeats {
		delete(s, results.FigBatchMS)
	}
	sec = section(t, string(render(t, "table", r)), "large (GetLargePayloadAsList) · batch 100")
	for _, l := range strings.Split(sec, "\n") {
		if strings.HasPrefix(l, "time/batch of 100") && !strings.Contains(l, "–") {
			t.Errorf("no batch completed: %q", l)
		}
	}
}

// A repeated cell's warnings that differ only in their numbers are folded
// into one line with the numbers' ranges; others are kept as they are.
func TestFoldRepeats(t *testing.T) {
	in := []string{
		"histograms not kept",
		"repeat 1: 644 of 5,999 calls started more than 1ms after they were due: 635 because the load generator woke late",
		"repeat 1: 1 scheduled call was never sent before the cell ended",
		"repeat 2: 503 of 6,000 calls started more than 1ms after they were due: 426 because the load generator woke late",
		"repeat 3: 207 of 6,000 calls started more than 1ms after they were due: the load generator woke late for all of them",
		"repeat 5: 181 of 6,000 calls started more than 1ms after they were due: 126 because the load generator woke late",
		"repeat 4: 2.5 s behind",
	}
	want := []string{
		"histograms not kept",
		"repeats 1-2, 5: 181–644 of 5,999–6,000 calls started more than 1ms after they were due: 126–635 because the load generator woke late",
		"repeat 1: 1 scheduled call was never sent before the cell ended",
		"repeat 3: 207 of 6,000 calls started more than 1ms after they were due: the load generator woke late for all of them",
		"repeat 4: 2.5 s behind",
	}
	got := foldRepeats(in)
	if !slices.Equal(got, want) {
		t.Errorf("foldRepeats:\n got %q\nwant %q", got, want)
	}
}
