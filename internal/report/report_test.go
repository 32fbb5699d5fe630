package report

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/stats"
)

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s: first difference at line %d:\n got: %q\nwant: %q\n(run go test -update if the change is intended)", path, i+1, g, w)
			}
		}
	}
}

var reportFixtures = []string{"basic", "repeats", "interrupted", "openloop"}

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

func TestTableRatios(t *testing.T) {
	r := loadFixture(t, "basic")
	out := string(render(t, "table", r))
	var rest, grpc *results.Cell
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Scenario == "large" && c.Batch == 100 {
			if c.Protocol == "rest" {
				rest = c
			} else {
				grpc = c
			}
		}
	}
	sec := section(t, out, "large (GetLargePayloadAsList) · batch 100")
	want := "=> gRPC " + fmtRatio(rest.LatencyUS.P50/grpc.LatencyUS.P50) + " faster than REST (p50), " +
		fmtRatio(grpc.CallsPerS/rest.CallsPerS) + " more calls/s, " +
		fmtRatio(rest.BytesPerCall.Received/grpc.BytesPerCall.Received) + " fewer bytes received, " +
		fmtRatio(*rest.ServerCPUUSPerCall / *grpc.ServerCPUUSPerCall) + " less server CPU/call\n"
	if !strings.Contains(sec, want) {
		t.Errorf("want ratio line %q in:\n%s", want, sec)
	}
	// Protocols side by side, REST first.
	if !regexpHeader(sec, "rest", "grpc") {
		t.Errorf("header not rest | grpc:\n%s", sec)
	}
	// In the small scenario of this fixture gRPC is slower: the line says so.
	if sec := section(t, out, "small (GetVersion) · batch 100"); !strings.Contains(sec, "slower than REST (p50)") || !strings.Contains(sec, "more server CPU/call") {
		t.Errorf("small: want slower/more wording:\n%s", sec)
	}
	// The post scenario compares the bytes sent.
	if sec := section(t, out, "post (PostLargePayload) · batch 100"); !strings.Contains(sec, "fewer bytes sent") {
		t.Errorf("post: want bytes sent:\n%s", sec)
	}
	// The stream scenario shows time to first record.
	if sec := section(t, out, "stream (GetLargePayload, streamed) · batch 100"); !strings.Contains(sec, "first record p50") {
		t.Errorf("stream: no first record row:\n%s", sec)
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
	// Three repeats can never reach α=0.05 with a rank test: say so.
	if !strings.Contains(sec, "— not significant") || !strings.Contains(sec, "need >= 4 samples") {
		t.Errorf("K=3: want not significant with its reason:\n%s", sec)
	}
	if !strings.Contains(sec, "x [") {
		t.Errorf("want ratio intervals:\n%s", sec)
	}
	if !strings.Contains(out, "figures are median [lo, hi] at 75% confidence") {
		t.Errorf("header does not explain intervals")
	}

	// Five repeats that differ clearly are significant: no marker.
	out = string(render(t, "table", loadFixture(t, "compare-old")))
	sec = section(t, out, "large (GetLargePayloadAsList) · batch 100")
	if strings.Contains(sec, "not significant") || !strings.Contains(sec, "faster than REST (p50)") {
		t.Errorf("K=5, clear difference: want significant ratios:\n%s", sec)
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
	// The ratio line leaves out the unknown server CPU.
	if i := strings.Index(sec, "=> gRPC"); i < 0 || strings.Contains(strings.SplitN(sec[i:], "\n", 2)[0], "server CPU") {
		t.Errorf("want a ratio line without the unknown server CPU:\n%s", sec)
	}
	sec = section(t, out, "large (GetLargePayloadAsList) · batch 200")
	if !regexpHeader(sec, "rest") || strings.Contains(sec, "=>") {
		t.Errorf("a lone protocol gets no ratio line:\n%s", sec)
	}
}

func TestTableOpenLoop(t *testing.T) {
	out := string(render(t, "table", loadFixture(t, "openloop")))
	for _, want := range []string{"open loop at 200 calls/s per cell", "· open loop at 200 calls/s ==", "rate requested", "rate achieved", "late calls", "uncorrected p99"} {
		if !strings.Contains(out, want) {
			t.Errorf("open loop: want %q", want)
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
		{thousands("1234567"), "1,234,567"},
		{thousands("-1234"), "-1,234"},
		{thousands("123"), "123"},
		{fmtCount(1000), "1,000"},
		{fmtUS(95.23), "95.2 µs"},
		{fmtUS(1234), "1.23 ms"},
		{fmtUS(2.5e6), "2.50 s"},
		{fmtBytes(118), "118 B"},
		{fmtBytes(219650), "219.7 KB"},
		{fmtBytes(99900), "99.90 KB"},
		{fmtBytes(1.25e6), "1.25 MB"},
		{fmtRate(39526.4), "39,526"},
		{fmtRate(0.5), "0.50"},
		{fmtRatio(6.83), "6.8x"},
		{fmtRatio(1.049), "1.05x"},
		{fmtInterval(results.Interval{Median: 1234, Lo: 1200, Hi: 1310, N: 3}, kindUS), "1.23 [1.20, 1.31] ms"},
		{fmtInterval(results.Interval{Median: 118, Lo: 118, Hi: 118, N: 3}, kindBytes), "118 B"},
		{fmtErrors(4, map[string]int64{"b": 1, "a": 1, "c": 2}), "4 (c 2, a 1, b 1)"},
		{fmtSeconds(1.5), "1.5s"},
		{fmtSeconds(176.4), "2m56s"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// A repeat too short to complete one batch records a time per batch of 0:
// it is left out of the median and the interval, never shown as 0 ms.
func TestBatchTimeWithoutCompletedBatches(t *testing.T) {
	r := loadFixture(t, "repeats")
	var c *results.Cell
	for i := range r.Cells {
		if r.Cells[i].Key() == "large/grpc/b100/c4" {
			c = &r.Cells[i]
		}
	}
	c.Repeats[0]["batch_ms_mean"] = 0
	iv := c.CI["batch_ms_mean"]
	iv.Lo = 0
	c.CI["batch_ms_mean"] = iv
	want := fmtInterval(stats.Summarize([]float64{c.Repeats[1]["batch_ms_mean"], c.Repeats[2]["batch_ms_mean"]}), kindMS)
	sec := section(t, string(render(t, "table", r)), "large (GetLargePayloadAsList) · batch 100")
	if !strings.Contains(sec, want) || strings.Contains(sec, "[0,") {
		t.Errorf("want time per batch %q without the empty repeat:\n%s", want, sec)
	}

	// No batch at all: a dash, and no bar.
	c.Batches, c.BatchMS = 0, results.Spread{}
	for _, s := range c.Repeats {
		s["batch_ms_mean"] = 0
	}
	sec = section(t, string(render(t, "table", r)), "large (GetLargePayloadAsList) · batch 100")
	for _, l := range strings.Split(sec, "\n") {
		if strings.HasPrefix(l, "time/batch of 100") && !strings.Contains(l, "–") {
			t.Errorf("no batch completed: %q", l)
		}
	}
}
