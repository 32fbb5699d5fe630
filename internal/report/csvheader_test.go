package report

import (
	"slices"
	"testing"
)

// The csv header only grows at its end: the columns as they were when the
// dimensions got theirs stay where they are, whatever is added after.
func TestCSVHeaderOnlyGrows(t *testing.T) {
	was := []string{
		"protocol", "scenario", "batch", "concurrency", "connections", "mode",
		"calls", "errors", "duration_s", "calls_per_s", "mb_per_s",
		"latency_p50_us", "latency_p90_us", "latency_p99_us", "latency_p999_us", "latency_max_us", "latency_mean_us",
		"batch_ms_mean", "batch_ms_stddev",
		"bytes_sent_per_call", "bytes_received_per_call",
		"client_cpu_us_per_call", "server_cpu_us_per_call",
		"first_record_p50_us",
		"rate_requested", "rate_achieved", "late_calls",
		"last_byte_p50_us", "decode_mean_us", "stop_reason",
		"suspect", "server_utilisation", "generator_wake_p50_us",
		"server_cpus", "link", "records", "compress", "tls",
	}
	if len(CSVHeader) < len(was) || !slices.Equal(CSVHeader[:len(was)], was) {
		t.Errorf("csv header\n%q\ndoes not start with the earlier one\n%q", CSVHeader, was)
	}
	capWas := []string{
		"scenario", "protocol", "concurrency", "server_cpus", "link", "records", "compress", "tls",
		"objective", "percentile", "bound_us", "max_errors",
		"rate", "lo", "hi", "held", "boundary", "workers", "generator_bound", "complete", "note",
		"searches", "rate_min", "rate_max", "failure", "search", "search_rate",
		"probe", "phase", "offered", "achieved", "latency_p50_us", "latency_objective_us",
		"calls", "errors", "verdict", "why", "duration_s",
	}
	if len(CapacityCSVHeader) < len(capWas) || !slices.Equal(CapacityCSVHeader[:len(capWas)], capWas) {
		t.Errorf("capacity csv header\n%q\ndoes not start with the earlier one\n%q", CapacityCSVHeader, capWas)
	}
}
