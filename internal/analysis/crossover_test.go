package analysis_test

import (
	"slices"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/results"
)

// sweep builds the cells of one scenario at several sizes: per size, the
// p50 µs and calls/s of REST, REST+protobuf and gRPC.
func sweep(s api.Scenario, sizes []int, p50, cps [][3]float64) []results.Cell {
	var out []results.Cell
	for i, n := range sizes {
		for j, p := range api.DefaultProtocols() {
			out = append(out, cell{p: p, s: s, b: 100, c: results.Condition{Records: n},
				p50: p50[i][j], p99: 2 * p50[i][j], mean: p50[i][j], callsPerS: cps[i][j], sent: 100, recv: float64(100 * n)}.build())
		}
	}
	return out
}

func TestCrossovers(t *testing.T) {
	sizes := []int{1, 10, 100, 1000, 10000}
	// large: gRPC slower at 1 and 10, faster from 100 (p50); more calls/s
	// from 1000 on, but also at 10 (noise). REST+protobuf faster at every
	// size, never more calls/s.
	large := sweep(api.Large, sizes,
		[][3]float64{{100, 90, 120}, {110, 100, 115}, {200, 150, 180}, {1000, 500, 300}, {9000, 4000, 2000}},
		[][3]float64{{1000, 900, 800}, {900, 800, 950}, {500, 400, 450}, {100, 90, 300}, {11, 10, 50}})
	// post: gRPC faster everywhere on p50, more calls/s only at 1.
	post := sweep(api.Post, []int{1, 10},
		[][3]float64{{100, 100, 50}, {200, 200, 100}},
		[][3]float64{{100, 100, 200}, {100, 100, 50}})
	small := cell{p: api.REST, s: api.Small, b: 100, p50: 50, callsPerS: 10}.build()
	smallG := cell{p: api.GRPC, s: api.Small, b: 100, p50: 60, callsPerS: 9}.build()
	r := result(append(append([]results.Cell{small, smallG}, large...), post...)...)
	analysis.Apply(r)

	type want struct {
		s       api.Scenario
		p       api.Protocol
		f       results.Figure
		records int
		sizes   []int
		text    string
	}
	wants := []want{
		{api.Large, api.RESTProtobuf, results.FigLatencyP50, 1, sizes, "large: REST+protobuf faster (p50) at every size (measured 1, 10, 100, 1000, 10000)"},
		{api.Large, api.RESTProtobuf, results.FigCallsPerS, 0, sizes, "large: REST+protobuf never more calls/s (measured 1, 10, 100, 1000, 10000)"},
		{api.Large, api.GRPC, results.FigLatencyP50, 100, sizes, "large: gRPC faster (p50) from 100 records (measured 1, 10, 100, 1000, 10000)"},
		{api.Large, api.GRPC, results.FigCallsPerS, 1000, sizes, "large: gRPC more calls/s from 1,000 records, also at 10 (measured 1, 10, 100, 1000, 10000)"},
		{api.Post, api.RESTProtobuf, results.FigLatencyP50, 0, []int{1, 10}, "post: REST+protobuf never faster (p50) (measured 1, 10)"},
		{api.Post, api.RESTProtobuf, results.FigCallsPerS, 0, []int{1, 10}, "post: REST+protobuf never more calls/s (measured 1, 10)"},
		{api.Post, api.GRPC, results.FigLatencyP50, 1, []int{1, 10}, "post: gRPC faster (p50) at every size (measured 1, 10)"},
		{api.Post, api.GRPC, results.FigCallsPerS, 0, []int{1, 10}, "post: gRPC more calls/s only at 1 (measured 1, 10)"},
	}
	if len(r.Crossovers) != len(wants) {
		t.Fatalf("%d crossovers, want %d: %+v", len(r.Crossovers), len(wants), r.Crossovers)
	}
	for i, w := range wants {
		x := r.Crossovers[i]
		if x.Scenario != w.s || x.Protocol != w.p || x.Figure != w.f || x.Records != w.records ||
			!slices.Equal(x.Sizes, w.sizes) || x.Text != w.text || x.Condition != (results.Condition{Concurrency: 1}) {
			t.Errorf("crossover %d:\n got %+v\nwant %+v", i, x, w)
		}
	}

	lines := analysis.CrossoverLines(r.Crossovers)
	wantLines := []string{
		"large: REST+protobuf faster (p50) at every size, never more calls/s (measured 1, 10, 100, 1000, 10000)",
		"large: gRPC faster (p50) from 100 records, more calls/s from 1,000 records, also at 10 (measured 1, 10, 100, 1000, 10000)",
		"post: REST+protobuf never faster (p50), never more calls/s (measured 1, 10)",
		"post: gRPC faster (p50) at every size, more calls/s only at 1 (measured 1, 10)",
	}
	if !slices.Equal(lines, wantLines) {
		t.Errorf("lines:\n%q\nwant\n%q", lines, wantLines)
	}

	// The verdicts name the size; the condition without it is the crossover's.
	for _, v := range r.Verdicts {
		if v.Scenario == api.Large && v.Condition.Records == 10 && v.Summary[:len("large · concurrency 1 · 10 records: ")] != "large · concurrency 1 · 10 records: " {
			t.Errorf("summary %q does not name the size", v.Summary)
		}
	}
}

// A run without a payload sweep has no crossovers; one size is no sweep;
// a size where a ratio is missing is left out of Sizes.
func TestCrossoversNone(t *testing.T) {
	r := result(
		cell{p: api.REST, s: api.Large, b: 1, p50: 100, callsPerS: 10}.build(),
		cell{p: api.GRPC, s: api.Large, b: 1, p50: 50, callsPerS: 20}.build(),
	)
	analysis.Apply(r)
	if len(r.Crossovers) != 0 {
		t.Errorf("crossovers without a sweep: %+v", r.Crossovers)
	}
	one := sweep(api.Large, []int{10}, [][3]float64{{100, 100, 50}}, [][3]float64{{1, 1, 2}})
	r = result(one...)
	analysis.Apply(r)
	if len(r.Crossovers) != 0 {
		t.Errorf("crossovers of one size: %+v", r.Crossovers)
	}
	cs := sweep(api.Large, []int{1, 10, 100}, [][3]float64{{100, 100, 150}, {100, 100, 50}, {100, 100, 50}}, [][3]float64{{1, 1, 1}, {1, 1, 2}, {1, 1, 2}})
	cs = slices.DeleteFunc(cs, func(c results.Cell) bool { return c.Protocol == api.GRPC && c.Records == 10 })
	cs = slices.DeleteFunc(cs, func(c results.Cell) bool { return c.Protocol == api.RESTProtobuf })
	r = result(cs...)
	analysis.Apply(r)
	if len(r.Crossovers) != 2 {
		t.Fatalf("%d crossovers: %+v", len(r.Crossovers), r.Crossovers)
	}
	if x := r.Crossovers[0]; x.Records != 100 || !slices.Equal(x.Sizes, []int{1, 100}) ||
		x.Text != "large: gRPC faster (p50) from 100 records (measured 1, 100)" {
		t.Errorf("crossover %+v", x)
	}
}
