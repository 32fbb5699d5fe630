package analysis

import (
	"slices"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
)

// The objectives of the series below.
var (
	p99under50ms = results.CapacityObjective{Objective: "p99<=50ms"}
	p99under20ms = results.CapacityObjective{Objective: "p99<=20ms"}
)

func TestCapacityVerdicts(t *testing.T) {
	one := results.Condition{ServerCPUs: 1}
	cs := []results.Capacity{
		{Scenario: api.Small, Protocol: api.GRPC, CapacityObjective: p99under50ms, CapacitySearch: results.CapacitySearch{Rate: 7300, Lo: 7300, Hi: 7600, Complete: true}},
		{Scenario: api.Small, Protocol: api.REST, CapacityObjective: p99under50ms, CapacitySearch: results.CapacitySearch{Rate: 9800, Lo: 9800, Hi: 10100, Complete: true}},
		{Scenario: api.Small, Condition: one, Protocol: api.REST, CapacityObjective: p99under50ms, CapacitySearch: results.CapacitySearch{Rate: 5000, Lo: 5000, Hi: 5200, Complete: true}},
		{Scenario: api.Small, Condition: one, Protocol: api.GRPC, CapacityObjective: p99under50ms, CapacitySearch: results.CapacitySearch{Rate: 3200, Lo: 3200, GeneratorBound: 3490,
			Note: "generator-bound at 3490 calls/s"}},
		{Scenario: api.Large, Protocol: api.REST, CapacityObjective: p99under50ms, CapacitySearch: results.CapacitySearch{Rate: 40, Lo: 40, Hi: 42, Note: "stopped by --max-time 2m0s: best bracket so far"}},
		{Scenario: api.Large, Protocol: api.GRPC, CapacityObjective: p99under50ms, CapacitySearch: results.CapacitySearch{GeneratorBound: 25}},
		{Scenario: api.Stream, Protocol: api.REST, CapacityObjective: p99under50ms, CapacitySearch: results.CapacitySearch{Rate: 100, Lo: 100, Hi: 105, Complete: true}},
		{Scenario: api.Stream, Protocol: api.GRPC, CapacityObjective: p99under50ms, CapacitySearch: results.CapacitySearch{Rate: 300, Lo: 300, GeneratorBound: 320}},
	}
	vs := CapacityVerdicts(cs)
	want := []string{
		"small, p99<=50ms: gRPC 7,300 calls/s [7,300, 7,600], REST 9,800 calls/s [9,800, 10,100] → REST sustains 1.34x more than gRPC",
		"small · server on 1 CPU, p99<=50ms: REST 5,000 calls/s [5,000, 5,200], gRPC at least 3,200 calls/s (generator-bound at 3,490)",
		"large, p99<=50ms: REST 40.0 calls/s [40.0, 42.0] (search stopped early), gRPC generator-bound at 25.0 calls/s before any rate passed",
		"stream, p99<=50ms: REST 100 calls/s [100, 105], gRPC at least 300 calls/s (generator-bound at 320) → gRPC sustains at least 3.0x more than REST",
	}
	if len(vs) != len(want) {
		t.Fatalf("%d verdicts", len(vs))
	}
	for i, v := range vs {
		if v.Summary != want[i] {
			t.Errorf("verdict %d:\n got %q\nwant %q", i, v.Summary, want[i])
		}
		if v.Baseline != api.REST {
			t.Errorf("verdict %d: baseline %s", i, v.Baseline)
		}
	}
	// A ratio only where both rates are known; the generator-bound one is a
	// lower bound, and a missing rate has none.
	if r := vs[0].Versus; len(r) != 1 || r[0].Protocol != api.GRPC || r[0].Ratios[0].Figure != FigCapacity {
		t.Errorf("ratios %+v", r)
	}
	for _, i := range []int{1, 2, 3} {
		if len(vs[i].Versus) != 0 {
			t.Errorf("verdict %d: a ratio with a generator-bound or missing rate: %+v", i, vs[i].Versus)
		}
	}
	if n := vs[1].Notes; len(n) != 1 || n[0] != "gRPC: generator-bound at 3490 calls/s" {
		t.Errorf("notes %q", n)
	}
}

// A failed series (the target stalled) is said plainly in the line, gets
// no ratio and no headline, and its failure is not repeated as a note.
func TestCapacityVerdictFailed(t *testing.T) {
	fail := "failed: the target stalled in 3 probes in a row at 400 calls/s (last: 12 calls timed out (--timeout 10s))"
	vs := CapacityVerdicts([]results.Capacity{
		{Scenario: api.Small, Protocol: api.REST, CapacityObjective: p99under50ms, CapacitySearch: results.CapacitySearch{Rate: 9800, Lo: 9800, Hi: 10100, Complete: true}},
		{Scenario: api.Small, Protocol: api.GRPC, CapacityObjective: p99under50ms, CapacitySearch: results.CapacitySearch{Lo: 200, Failure: fail, Note: fail}},
	})
	want := "small, p99<=50ms: REST 9,800 calls/s [9,800, 10,100], gRPC " + fail
	if len(vs) != 1 || vs[0].Summary != want {
		t.Fatalf("verdicts %+v\nwant %q", vs, want)
	}
	if len(vs[0].Versus) != 0 || len(vs[0].Notes) != 0 {
		t.Errorf("ratios %+v, notes %q", vs[0].Versus, vs[0].Notes)
	}
}

// An unstable series (a rate failed well below one that passed) says so
// in its line and gets no ratio and no headline.
func TestCapacityVerdictUnstable(t *testing.T) {
	why := "25,600 calls/s failed (achieved 23,822 of 25,600 calls/s) where 30,444 passed: the target or the machine changed speed during the search"
	vs := CapacityVerdicts([]results.Capacity{
		{Scenario: api.Small, Protocol: api.REST, CapacityObjective: p99under20ms, CapacitySearch: results.CapacitySearch{Rate: 6400, Lo: 6400, Hi: 25600, Unstable: why}},
		{Scenario: api.Small, Protocol: api.GRPC, CapacityObjective: p99under20ms, CapacitySearch: results.CapacitySearch{Rate: 36204, Lo: 36204, Hi: 39481, Complete: true}},
	})
	want := "small, p99<=20ms: REST 6,400 calls/s [6,400, 25,600] (search stopped early) (unstable: " + why + "), gRPC 36,204 calls/s [36,204, 39,481]"
	if len(vs) != 1 || vs[0].Summary != want {
		t.Fatalf("verdicts %+v\nwant %q", vs, want)
	}
	if len(vs[0].Versus) != 0 {
		t.Errorf("a ratio from an unstable series: %+v", vs[0].Versus)
	}
}

// repeated is a series of searches that found rates, aggregated as
// package capacity does: the median and the range.
func repeated(p api.Protocol, cond results.Condition, rates ...float64) results.Capacity {
	c := results.Capacity{Scenario: api.Small, Protocol: p, Condition: cond, CapacityObjective: p99under50ms}
	for _, r := range rates {
		c.Searches = append(c.Searches, results.CapacitySearch{Rate: r, Lo: r, Hi: r * 1.04, Complete: true})
	}
	s := append([]float64(nil), rates...)
	slices.Sort(s)
	c.Rate, c.RateMin, c.RateMax, c.Complete = s[len(s)/2], s[0], s[len(s)-1], true
	c.Lo, c.Hi = s[0], s[len(s)-1]*1.04 // the lowest lo, the highest hi
	return c
}

// Repeated searches: each protocol's median and range, the medians
// compared, and said when the ranges overlap; the ratio carries the
// spread of the per-search ratios and is too few to test at 3.
func TestCapacityVerdictsRepeated(t *testing.T) {
	one := results.Condition{ServerCPUs: 1}
	vs := CapacityVerdicts([]results.Capacity{
		repeated(api.REST, results.Condition{}, 9800, 9500, 10100),
		repeated(api.GRPC, results.Condition{}, 7300, 7600, 7100),
		repeated(api.REST, one, 5000, 5200, 4700),
		repeated(api.GRPC, one, 5100, 4900, 5400),
	})
	want := []string{
		"small, p99<=50ms: REST 9,800 calls/s, median of 3 searches [9,500, 10,100], gRPC 7,300 calls/s, median of 3 searches [7,100, 7,600] → REST sustains 1.34x more than gRPC (medians)",
		"small · server on 1 CPU, p99<=50ms: REST 5,000 calls/s, median of 3 searches [4,700, 5,200], gRPC 5,100 calls/s, median of 3 searches [4,900, 5,400] → gRPC sustains 1.02x more than REST (medians; the ranges overlap)",
	}
	if len(vs) != 2 {
		t.Fatalf("%d verdicts", len(vs))
	}
	for i, v := range vs {
		if v.Summary != want[i] {
			t.Errorf("verdict %d:\n got %q\nwant %q", i, v.Summary, want[i])
		}
	}
	r := vs[0].Versus[0].Ratios[0]
	if r.N != 3 || r.Significance != results.TooFew || r.Lo == nil || r.Hi == nil || *r.Lo > r.Ratio || *r.Hi < r.Ratio {
		t.Errorf("ratio %+v", r)
	}
}

// Searches stopped while they were still growing (interrupted at 12 s: 400
// calls/s passed, no rate failed) found lower bounds, not capacities: the
// summary said "gRPC sustains 1.00x more than REST". Each now reads "at
// least", and no ratio is drawn; a bracketed rate against one with no
// failure is "at least" as many times more.
func TestCapacityVerdictNoRateFailed(t *testing.T) {
	grown := func(p api.Protocol, rate float64) results.Capacity {
		return results.Capacity{Scenario: api.Small, Protocol: p, CapacityObjective: p99under20ms,
			CapacitySearch: results.CapacitySearch{Rate: rate, Lo: rate, Note: "stopped: interrupted"}}
	}
	vs := CapacityVerdicts([]results.Capacity{grown(api.REST, 400), grown(api.GRPC, 400)})
	want := "small, p99<=20ms: REST at least 400 calls/s (no rate failed; search stopped early), gRPC at least 400 calls/s (no rate failed; search stopped early)"
	if len(vs) != 1 || vs[0].Summary != want || len(vs[0].Versus) != 0 {
		t.Fatalf("verdicts %+v\nwant summary %q and no ratio", vs, want)
	}
	bracketed := grown(api.REST, 5000)
	bracketed.Hi, bracketed.Complete = 5200, true
	vs = CapacityVerdicts([]results.Capacity{bracketed, grown(api.GRPC, 12800)})
	want = "small, p99<=20ms: REST 5,000 calls/s [5,000, 5,200], gRPC at least 12,800 calls/s (no rate failed; search stopped early) → gRPC sustains at least 2.6x more than REST"
	if len(vs) != 1 || vs[0].Summary != want || len(vs[0].Versus) != 0 {
		t.Errorf("verdicts %+v\nwant summary %q and no ratio", vs, want)
	}
}
