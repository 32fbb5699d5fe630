package session

import (
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/results"
)

func TestParseMetrics(t *testing.T) {
	const text = `# HELP meteorbench_cpu_seconds_total CPU.
# TYPE meteorbench_cpu_seconds_total counter
meteorbench_cpu_seconds_total 12.345678
meteorbench_requests_total{method="GetVersion",protocol="grpc"} 42
meteorbench_requests_total{method="PostLargePayload",protocol="rest-protobuf"} 7 1712345678000
meteorbench_build_info{go_version="go1.26",version="a\"b,c}"} 1
go_gc_duration_seconds{quantile="0.5"} 1.5e-05
`
	s, err := ParseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if s.CPU != 12345678*time.Microsecond {
		t.Errorf("cpu %v", s.CPU)
	}
	if s.Requests["grpc/GetVersion"] != 42 || s.Requests["rest-protobuf/PostLargePayload"] != 7 {
		t.Errorf("requests %v", s.Requests)
	}
	if _, err := ParseMetrics(strings.NewReader("go_goroutines 5\n")); err == nil {
		t.Error("metrics without the CPU counter accepted")
	}
	if _, err := ParseMetrics(strings.NewReader("meteorbench_cpu_seconds_total abc\n")); err == nil {
		t.Error("a malformed sample accepted")
	}
}

// A repeat too short to complete one batch has no time per batch: the
// merged cell and its interval come from the repeats that have one, never
// from a 0 standing in for "none".
func TestMergeCellIgnoresRepeatsWithoutBatches(t *testing.T) {
	cell := func(batches int64, batchMS float64) results.Cell {
		return results.Cell{
			CellKey: results.CellKey{Protocol: "rest", Scenario: "large", Batch: 100, Condition: results.Condition{Concurrency: 1}},
			Calls:   150, CallsPerS: 100, Batches: batches, BatchMS: results.Spread{Mean: batchMS},
		}
	}
	m := mergeCell([]results.Cell{cell(1, 900), cell(0, 0), cell(1, 1100), cell(1, 1000)})
	if m.BatchMS.Mean != 1000 {
		t.Errorf("merged time per batch = %v, want 1000 (the median of the three real ones)", m.BatchMS.Mean)
	}
	iv, ok := m.CI["batch_ms_mean"]
	if !ok || iv.N != 3 || iv.Lo != 900 || iv.Hi != 1100 {
		t.Errorf("batch_ms_mean interval = %+v (present %v), want n=3 over [900, 1100]", iv, ok)
	}
	if _, has := m.Repeats[1]["batch_ms_mean"]; has {
		t.Error("the repeat without a batch reports a time per batch")
	}
	if m.Batches != 3 || m.Calls != 600 {
		t.Errorf("totals: %d batches, %d calls; want 3, 600", m.Batches, m.Calls)
	}
}
