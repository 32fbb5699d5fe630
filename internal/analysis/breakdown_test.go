package analysis

import (
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
)

// TestBreakdownClause: the clause names the category whose CPU per call
// differs most, as each protocol has it (JSON or protobuf encoding).
func TestBreakdownClause(t *testing.T) {
	bd := func(shares map[string][2]float64) *results.CPUBreakdown {
		b := &results.CPUBreakdown{Categories: map[string]results.CPUShare{}, Samples: 100}
		for k, v := range shares {
			b.Categories[k] = results.CPUShare{Share: v[0], USPerCall: v[1], Samples: 1}
		}
		return b
	}
	rest := &results.Cell{ServerCPUBreakdown: bd(map[string][2]float64{"encode": {0.61, 2100}, "syscall_net": {0.39, 1300}})}
	grpc := &results.Cell{ServerCPUBreakdown: bd(map[string][2]float64{"encode": {0.24, 200}, "syscall_net": {0.76, 630}})}
	got := breakdownClause(api.REST, api.GRPC, map[api.Protocol][]*results.Cell{api.REST: {rest}, api.GRPC: {grpc}})
	want := "REST's server CPU: 61% JSON encoding, 2.10 ms/call; gRPC's: 24% protobuf encoding, 200 µs/call"
	if got != want {
		t.Errorf("clause:\n got %s\nwant %s", got, want)
	}
	grpc.ServerCPUBreakdown = &results.CPUBreakdown{Unknown: "no pprof"}
	if got := breakdownClause(api.REST, api.GRPC, map[api.Protocol][]*results.Cell{api.REST: {rest}, api.GRPC: {grpc}}); got != "" {
		t.Errorf("with one side unknown: %q, want none", got)
	}
}
