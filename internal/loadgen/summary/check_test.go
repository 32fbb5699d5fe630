package summary

import (
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/results"
)

// A cell checks itself: each contradiction or distortion makes it suspect
// with its reason, and a cell whose figures hold is not.
func TestCheckCell(t *testing.T) {
	key := func(sc api.Scenario, n int) plan.Spec {
		return plan.Spec{CellKey: results.CellKey{Scenario: sc, Protocol: api.REST, Batch: 1, Condition: results.Condition{Concurrency: n}}}
	}
	// calls of d each, back to back on n workers for secs: Little holds.
	closed := func(n int, calls int64, d time.Duration) engine.Result {
		tl := engine.NewTally(false)
		tl.Calls = calls
		tl.Sum[results.KindLatency] = float64(calls) * float64(d)
		return engine.Result{Tally: tl}
	}
	cases := []struct {
		name string
		rate float64
		spec plan.Spec
		ph   engine.Result
		cell results.Cell
		want string // a part of the one reason; "" for none
	}{
		{name: "little holds", spec: key(api.Small, 8), ph: closed(8, 8000, time.Millisecond),
			cell: results.Cell{DurationS: 1}},
		// The gzip stall's shape: 8 workers, 134 calls of 43 ms in 5 s.
		{name: "little broken", spec: key(api.Small, 8), ph: closed(8, 134, 43*time.Millisecond),
			cell: results.Cell{DurationS: 5}, want: "Little's law does not hold"},
		{name: "more in flight than workers", spec: key(api.Small, 1), ph: closed(1, 1000, 2*time.Millisecond),
			cell: results.Cell{DurationS: 1}, want: "Little's law does not hold"},
		{name: "abandoned", spec: key(api.Small, 1), ph: func() engine.Result {
			p := closed(1, 1000, time.Millisecond)
			p.Tally.Abandoned, p.Tally.Errors = 1, 1
			return p
		}(), cell: results.Cell{DurationS: 1}, want: "the target stalled it"},
		{name: "short of the records", spec: key(api.Large, 1), ph: closed(1, 100, 10*time.Millisecond),
			cell: results.Cell{DurationS: 1, BytesPerCall: results.Bytes{Received: 15000}}, want: "cannot carry the 1000 records"},
		{name: "records carried", spec: key(api.Large, 1), ph: closed(1, 100, 10*time.Millisecond),
			cell: results.Cell{DurationS: 1, BytesPerCall: results.Bytes{Received: 219650}}},
		// An open-loop cell short of its rate is saturated (the analysis
		// draws no latency verdict from it), not suspect: a server that
		// cannot keep up is a finding, and capacity's failing probes are
		// made of them.
		{name: "rate not delivered", rate: 1000, spec: key(api.Small, 4), ph: func() engine.Result {
			p := closed(4, 800, time.Millisecond)
			p.Missed = 200
			return p
		}(), cell: results.Cell{DurationS: 1}},
		{name: "generator's own wake-up", rate: 2000, spec: key(api.Small, 1024), ph: closed(1024, 6000, 5700*time.Microsecond),
			cell: results.Cell{DurationS: 3, LatencyUS: results.Latency{P50: 5700}, GeneratorDelayUS: &results.GeneratorDelay{Wake: results.Latency{P50: 5100, P99: 10100}}},
			want: "woken by the network 5.10 ms late"},
	}
	for _, tc := range cases {
		spec := tc.spec
		spec.RateRequested = tc.rate // the cell's rate, as the plan keys it
		c := tc.cell
		c.Calls = tc.ph.Tally.Calls
		got := Check(&c, spec, tc.spec.Concurrency, tc.ph, 10*time.Second, false)
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: suspect %q, want none", tc.name, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s: suspect %q, want one reason with %q", tc.name, got, tc.want)
		}
	}
}
