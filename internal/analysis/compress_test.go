package analysis_test

import (
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/results"
)

// A gzip verdict gets a note comparing each protocol with itself without
// gzip; the verdict without gzip gets none.
func TestCompressNote(t *testing.T) {
	gz := results.Condition{Concurrency: 1, Compress: "gzip"}
	r := result(
		cell{p: api.REST, s: api.Large, b: 100, p50: 1000, sent: 100, recv: 219900, clientCPU: 500, serverCPU: 400}.build(),
		cell{p: api.GRPC, s: api.Large, b: 100, p50: 500, sent: 100, recv: 99900, clientCPU: 200, serverCPU: 100}.build(),
		cell{p: api.REST, s: api.Large, b: 100, c: gz, p50: 1200, sent: 100, recv: 27400, clientCPU: 900, serverCPU: 1200}.build(),
		cell{p: api.GRPC, s: api.Large, b: 100, c: gz, p50: 900, sent: 100, recv: 36900, clientCPU: 400, serverCPU: 300}.build(),
	)
	vs := analysis.Verdicts(r)
	if len(vs) != 2 {
		t.Fatalf("%d verdicts", len(vs))
	}
	for _, n := range vs[0].Notes {
		if strings.Contains(n, "against none") {
			t.Errorf("the verdict without gzip has a compression note: %q", n)
		}
	}
	want := "gzip against none, per call: REST 8.0x fewer bytes, 3.0x the server CPU, 1.80x the client CPU; gRPC 2.7x fewer bytes, 3.0x the server CPU, 2.0x the client CPU"
	found := false
	for _, n := range vs[1].Notes {
		found = found || n == want
	}
	if !found {
		t.Errorf("gzip verdict notes %q\nwant %q", vs[1].Notes, want)
	}
}
