package analysis_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/results"
)

// An unpaced feed's verdict says that its latency is the buffering's, and
// what to compare instead; a paced feed's and any other scenario's do not.
func TestFeedNote(t *testing.T) {
	unpaced := results.Condition{Concurrency: 1}
	paced := results.Condition{Concurrency: 1, FeedRate: 200}
	r := result(
		cell{p: api.REST, s: api.Feed, b: 100, c: unpaced, p50: 40}.build(),
		cell{p: api.GRPC, s: api.Feed, b: 100, c: unpaced, p50: 640}.build(),
		cell{p: api.REST, s: api.Feed, b: 100, c: paced, p50: 40}.build(),
		cell{p: api.GRPC, s: api.Feed, b: 100, c: paced, p50: 45}.build(),
		cell{p: api.REST, s: api.Large, b: 100, c: unpaced, p50: 400}.build(),
		cell{p: api.GRPC, s: api.Large, b: 100, c: unpaced, p50: 100}.build(),
	)
	vs := analysis.Verdicts(r)
	if len(vs) != 3 {
		t.Fatalf("%d verdicts, want 3", len(vs))
	}
	for _, v := range vs {
		has := slices.ContainsFunc(v.Notes, func(n string) bool { return strings.HasPrefix(n, "unpaced feed") })
		want := v.Scenario == api.Feed && v.Condition.FeedRate == 0
		if has != want {
			t.Errorf("%s rate %v: unpaced-feed note %v, want %v (notes %q)", v.Scenario, v.Condition.FeedRate, has, want, v.Notes)
		}
	}
}
