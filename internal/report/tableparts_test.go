package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/results"
)

// A section of five protocols (run --proto all) is two tables under each
// other: REST, REST+protobuf and gRPC, then gRPC-Web and Connect; the
// HTTP version is the section's condition and the CSV's column.
func TestFiveProtocolsTwoTables(t *testing.T) {
	r := &results.Result{Schema: results.Schema, Settings: results.Settings{Mode: results.ModeClosed, Repeat: 1}}
	for _, v := range []string{"", "2"} {
		for _, p := range api.Protocols() {
			if v == "2" && p == api.GRPC {
				continue
			}
			r.Cells = append(r.Cells, results.Cell{
				CellKey:     results.CellKey{Protocol: p, Scenario: api.Small, Batch: 100, Condition: results.Condition{Concurrency: 1, HTTPVersion: v}},
				Connections: 1, Mode: results.ModeClosed, Calls: 1000, DurationS: 1, CallsPerS: 1000,
				LatencyUS: results.Latency{P50: 950, P90: 1200, P99: 1500, P999: 1800, Max: 2100, Mean: 1000},
			})
		}
	}
	var b bytes.Buffer
	if err := report.Write(&b, "table", r); err != nil {
		t.Fatal(err)
	}
	var heads []string
	for _, l := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 && (f[0] == "rest" || f[0] == "grpc-web" || f[0] == "connect") && strings.HasPrefix(l, " ") {
			heads = append(heads, strings.Join(f, " "))
		}
	}
	want := []string{"rest rest-protobuf grpc", "grpc-web connect", "rest rest-protobuf grpc-web", "connect"}
	if strings.Join(heads, "|") != strings.Join(want, "|") {
		t.Errorf("table heads %q, want %q:\n%s", heads, want, b.String())
	}
	if !strings.Contains(b.String(), "== small (GetVersion) · batch 100 · concurrency 1 · http 2 ==") {
		t.Errorf("no HTTP/2 section:\n%s", b.String())
	}
	b.Reset()
	if err := report.Write(&b, "csv", r); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(b.String(), "\n"); !strings.HasSuffix(lines[0], ",http_version,proxy") || !strings.HasSuffix(lines[len(lines)-2], ",2,") {
		t.Errorf("CSV:\n%s", b.String())
	}
}
