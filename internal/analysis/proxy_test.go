package analysis_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/results"
)

// A verdict behind a proxy says what the proxy added to each protocol
// against the server reached directly: over TLS there when the run has
// direct TLS cells, else against plaintext, saying so; the direct verdict
// gets no such note.
func TestProxyNote(t *testing.T) {
	plain := results.Condition{Concurrency: 1}
	tls := results.Condition{Concurrency: 1, TLS: true}
	nginx := results.Condition{Concurrency: 1, TLS: true, Proxy: "nginx"}
	for _, tc := range []struct {
		direct results.Condition
		want   string
	}{
		{plain, "through nginx: +310 µs p50 and +95.0 µs server CPU per REST call, +620 µs p50 and +180 µs server CPU per gRPC call (TLS at nginx, against the server in plaintext)"},
		{tls, "through nginx: +310 µs p50 and +95.0 µs server CPU per REST call, +620 µs p50 and +180 µs server CPU per gRPC call"},
	} {
		r := result(
			cell{p: api.REST, s: api.Small, b: 100, c: tc.direct, p50: 100, serverCPU: 20}.build(),
			cell{p: api.GRPC, s: api.Small, b: 100, c: tc.direct, p50: 130, serverCPU: 30}.build(),
			cell{p: api.REST, s: api.Small, b: 100, c: nginx, p50: 410, serverCPU: 115}.build(),
			cell{p: api.GRPC, s: api.Small, b: 100, c: nginx, p50: 750, serverCPU: 210}.build(),
		)
		vs := analysis.Verdicts(r)
		if len(vs) != 2 {
			t.Fatalf("%d verdicts", len(vs))
		}
		var direct, behind results.Verdict
		for _, v := range vs {
			if v.Condition.Proxy == "" {
				direct = v
			} else {
				behind = v
			}
		}
		if slices.ContainsFunc(direct.Notes, func(n string) bool { return strings.HasPrefix(n, "through") }) {
			t.Errorf("the direct verdict has a proxy note: %q", direct.Notes)
		}
		if len(behind.Notes) == 0 || behind.Notes[0] != tc.want {
			t.Errorf("direct %v: notes %q\nwant first %q", tc.direct, behind.Notes, tc.want)
		}
	}
}
