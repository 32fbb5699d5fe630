package session

import (
	"strings"
	"testing"
	"time"
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
