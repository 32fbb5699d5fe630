package engine

import (
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/results"
)

// The shares of N segments sum to the whole, differ by at most one, are the
// same however often they are computed, and N = 1 is the whole.
func TestSegmentShares(t *testing.T) {
	tests := []struct {
		x, n int
		want []int // the shares of segments 1..n
	}{
		{x: 10, n: 1, want: []int{10}},
		{x: 9, n: 3, want: []int{3, 3, 3}},
		{x: 10, n: 3, want: []int{3, 3, 4}},
		{x: 11, n: 3, want: []int{3, 4, 4}},
		{x: 1, n: 3, want: []int{0, 0, 1}},
		{x: 2, n: 3, want: []int{0, 1, 1}},
		{x: 0, n: 4, want: []int{0, 0, 0, 0}},
		{x: 64, n: 5, want: []int{12, 13, 13, 13, 13}},
	}
	for _, tt := range tests {
		var got []int
		for i := 1; i <= tt.n; i++ {
			got = append(got, share(results.Segment{Index: i, Count: tt.n}, tt.x))
		}
		if !equalInts(got, tt.want) {
			t.Errorf("share of %d over %d: %v, want %v", tt.x, tt.n, got, tt.want)
		}
	}
	for x := range 200 {
		if s := share(results.Segment{}, x); s != x {
			t.Errorf("the whole plan's share of %d: %d", x, s)
		}
		for n := 1; n <= 12; n++ {
			sum, sumStrided := 0, 0
			lo, hi := x, 0
			for i := 1; i <= n; i++ {
				seg := results.Segment{Index: i, Count: n}
				s := share(seg, x)
				if s != share(seg, x) {
					t.Fatalf("share not deterministic")
				}
				sum += s
				lo, hi = min(lo, s), max(hi, s)
				sumStrided += strided(seg, x)
			}
			if sum != x || sumStrided != x || hi-lo > 1 {
				t.Errorf("x %d over %d: shares sum to %d, strided to %d, spread %d..%d", x, n, sum, sumStrided, lo, hi)
			}
		}
	}
	// Closed-loop iterations follow the workers: they sum to the whole and
	// a segment without a worker has none.
	for c := 1; c <= 9; c++ {
		for it := 1; it <= 30; it++ {
			for n := 1; n <= 6; n++ {
				sum := 0
				for i := 1; i <= n; i++ {
					seg := results.Segment{Index: i, Count: n}
					is := iterationShare(seg, c, it)
					if share(seg, c) == 0 && is != 0 {
						t.Errorf("%d iterations of %d workers over %d: segment %d has no worker but %d iterations", it, c, n, i, is)
					}
					sum += is
				}
				if sum != it {
					t.Errorf("%d iterations of %d workers over %d: shares sum to %d", it, c, n, sum)
				}
			}
		}
	}
	if got := []int{strided(results.Segment{Index: 1, Count: 3}, 10), strided(results.Segment{Index: 2, Count: 3}, 10), strided(results.Segment{Index: 3, Count: 3}, 10)}; !equalInts(got, []int{4, 3, 3}) {
		t.Errorf("strided shares of 10 calls over 3: %v, want [4 3 3] (calls 0,3,6,9 / 1,4,7 / 2,5,8)", got)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A cell's share: closed loop splits workers and iterations, open loop the
// schedule (with at least one worker); a share of nothing is empty, not an
// error.
// shareCfg is what of a run's Config a cell's share depends on.
type shareCfg struct {
	Segment    results.Segment
	Rate       float64
	Iterations int
	Duration   time.Duration
}

func TestCellShare(t *testing.T) {
	spec := func(cfg shareCfg, c int) results.CellKey {
		return results.CellKey{Batch: 5, Condition: results.Condition{Concurrency: c, RateRequested: cfg.Rate}}
	}
	seg := func(i, n int) results.Segment { return results.Segment{Index: i, Count: n} }
	tests := []struct {
		name string
		cfg  shareCfg
		c    int
		want Share
	}{
		{"whole closed", shareCfg{Iterations: 7}, 4, Share{Workers: 4, Iterations: 7}},
		{"closed 2/3", shareCfg{Segment: seg(2, 3), Iterations: 10}, 4, Share{Workers: 1, Iterations: 3}},
		{"closed 3/3", shareCfg{Segment: seg(3, 3), Iterations: 10}, 4, Share{Workers: 2, Iterations: 5}},
		{"closed, no worker", shareCfg{Segment: seg(1, 3), Duration: time.Second}, 1, Share{Empty: true, Why: "1 workers"}},
		{"closed, no iteration", shareCfg{Segment: seg(1, 3), Iterations: 2}, 3, Share{Workers: 1, Empty: true, Why: "2 iterations"}},
		{"open 2/3", shareCfg{Segment: seg(2, 3), Rate: 300, Duration: time.Second}, 1,
			Share{Workers: 1, Sched: Schedule{Rate: 300, Phase: 1, Stride: 3}}},
		{"open 1/3 with iterations", shareCfg{Segment: seg(1, 3), Rate: 300, Iterations: 2}, 6,
			Share{Workers: 2, Iterations: 4, Sched: Schedule{Rate: 300, Phase: 0, Stride: 3}}},
		{"open, no call", shareCfg{Segment: seg(3, 3), Rate: 300, Iterations: 2}, 1,
			Share{Workers: 1, Sched: Schedule{Rate: 300, Phase: 2, Stride: 3}}},
	}
	tests[len(tests)-1].cfg.Iterations = 1 // 1 × batch 5 = 5 calls: 2, 2, 1
	tests[len(tests)-1].want.Iterations = 1
	for _, tt := range tests {
		got := ShareOf(tt.cfg.Segment, 0, spec(tt.cfg, tt.c), tt.cfg.Iterations)
		if got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	// One open-loop call over 5 segments: segment 1 makes it (call 0),
	// segment 2 has nothing.
	oneCall := results.CellKey{Batch: 1, Condition: results.Condition{Concurrency: 1, RateRequested: 10}}
	first, second := shareCfg{Segment: seg(1, 5), Rate: 10, Iterations: 1}, shareCfg{Segment: seg(2, 5), Rate: 10, Iterations: 1}
	if sh := ShareOf(first.Segment, 0, oneCall, first.Iterations); sh.Empty || sh.Result(first.Segment).Empty || sh.Result(first.Segment).Rate != 2 {
		t.Errorf("segment 1/5 of one call: %+v, want the call at 2 calls/s", sh.Result(first.Segment))
	}
	if sh := ShareOf(second.Segment, 0, oneCall, second.Iterations); !sh.Empty || !sh.Result(second.Segment).Empty || sh.Result(second.Segment).Workers != 0 {
		t.Errorf("segment 2/5 of one call: %+v, want empty", sh.Result(second.Segment))
	}
}
