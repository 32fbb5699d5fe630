package analysis

import (
	"strings"

	"github.com/meteorbench/meteorbench/internal/results"
)

// notServedNote notes on a verdict the protocols of its scenario (and
// HTTP version) the target did not serve (Result.NotServed): why a
// protocol is missing from the comparison.
func notServedNote(r *results.Result, v *results.Verdict) {
	var names []string
	for _, n := range r.NotServed {
		if n.Scenario == v.Scenario && (n.HTTPVersion == "" || n.HTTPVersion == v.Condition.HTTPVersion) {
			names = append(names, n.Protocol.Title())
		}
	}
	if len(names) > 0 {
		v.Notes = append(v.Notes, strings.Join(names, ", ")+" not served by the target: not measured")
	}
}
