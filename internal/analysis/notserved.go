package analysis

import (
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
)

// notServedNote notes on a verdict the protocols of its scenario (and
// HTTP version) the target did not serve (Result.NotServed), and those a
// per-protocol --target gave no address (none in Env.Targets: never
// asked), with the keys that would: why a protocol is missing from the
// comparison.
func notServedNote(r *results.Result, v *results.Verdict) {
	var names, unaddressed, keys []string
	for _, n := range r.NotServed {
		// gRPC is asked over HTTP/2 once, for its verdicts at 1.1 and 2,
		// and over HTTP/3 (results.Dimension.For).
		if n.Scenario != v.Scenario || n.HTTPVersion != versionFor(n.Protocol, v.Condition) {
			continue
		}
		if len(r.Env.Targets) > 0 && r.Env.Targets[string(n.Protocol)] == "" {
			unaddressed = append(unaddressed, n.Protocol.Title())
			keys = append(keys, string(n.Protocol)+"=HOST:PORT")
			continue
		}
		names = append(names, n.Protocol.Title())
	}
	if len(names) > 0 {
		v.Notes = append(v.Notes, strings.Join(names, ", ")+" not served by the target: not measured")
	}
	if len(unaddressed) > 0 {
		v.Notes = append(v.Notes, strings.Join(unaddressed, ", ")+" not measured: --target gives no address (add "+strings.Join(keys, ",")+")")
	}
}

// versionFor is the HTTP version protocol p is measured at under c (a
// NotServed's): c's, or "" where the version changes nothing for p (gRPC
// at 1.1 and 2).
func versionFor(p api.Protocol, c results.Condition) string {
	if d, ok := results.DimensionByField("http_version"); ok && !d.For(p, c) {
		return ""
	}
	return c.HTTPVersion
}
