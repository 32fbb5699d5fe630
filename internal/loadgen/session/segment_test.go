package session

import (
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
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
func TestCellShare(t *testing.T) {
	spec := func(cfg plan.Config, c int) plan.Spec {
		return plan.Spec{CellKey: results.CellKey{Batch: 5, Condition: results.Condition{Concurrency: c, RateRequested: cfg.Rate}}}
	}
	seg := func(i, n int) results.Segment { return results.Segment{Index: i, Count: n} }
	tests := []struct {
		name string
		cfg  plan.Config
		c    int
		want cellShare
	}{
		{"whole closed", plan.Config{Iterations: 7}, 4, cellShare{workers: 4, iterations: 7}},
		{"closed 2/3", plan.Config{Segment: seg(2, 3), Iterations: 10}, 4, cellShare{workers: 1, iterations: 3}},
		{"closed 3/3", plan.Config{Segment: seg(3, 3), Iterations: 10}, 4, cellShare{workers: 2, iterations: 5}},
		{"closed, no worker", plan.Config{Segment: seg(1, 3), Duration: time.Second}, 1, cellShare{empty: true, why: "1 workers"}},
		{"closed, no iteration", plan.Config{Segment: seg(1, 3), Iterations: 2}, 3, cellShare{workers: 1, empty: true, why: "2 iterations"}},
		{"open 2/3", plan.Config{Segment: seg(2, 3), Rate: 300, Duration: time.Second}, 1,
			cellShare{workers: 1, sched: engine.Schedule{Rate: 300, Phase: 1, Stride: 3}}},
		{"open 1/3 with iterations", plan.Config{Segment: seg(1, 3), Rate: 300, Iterations: 2}, 6,
			cellShare{workers: 2, iterations: 4, sched: engine.Schedule{Rate: 300, Phase: 0, Stride: 3}}},
		{"open, no call", plan.Config{Segment: seg(3, 3), Rate: 300, Iterations: 2}, 1,
			cellShare{workers: 1, sched: engine.Schedule{Rate: 300, Phase: 2, Stride: 3}}},
	}
	tests[len(tests)-1].cfg.Iterations = 1 // 1 × batch 5 = 5 calls: 2, 2, 1
	tests[len(tests)-1].want.iterations = 1
	for _, tt := range tests {
		got := shareOf(tt.cfg, spec(tt.cfg, tt.c), tt.cfg.Bounds())
		if got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	// One open-loop call over 5 segments: segment 1 makes it (call 0),
	// segment 2 has nothing.
	oneCall := plan.Spec{CellKey: results.CellKey{Batch: 1, Condition: results.Condition{Concurrency: 1, RateRequested: 10}}}
	first, second := plan.Config{Segment: seg(1, 5), Rate: 10, Iterations: 1}, plan.Config{Segment: seg(2, 5), Rate: 10, Iterations: 1}
	if sh := shareOf(first, oneCall, first.Bounds()); sh.empty || sh.result(first.Segment).Empty || sh.result(first.Segment).Rate != 2 {
		t.Errorf("segment 1/5 of one call: %+v, want the call at 2 calls/s", sh.result(first.Segment))
	}
	if sh := shareOf(second, oneCall, second.Bounds()); !sh.empty || !sh.result(second.Segment).Empty || sh.result(second.Segment).Workers != 0 {
		t.Errorf("segment 2/5 of one call: %+v, want empty", sh.result(second.Segment))
	}
}

func TestParseSegmentAndStartAt(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	seg, err := ParseSegment("2/3")
	at, err2 := ParseStartAt("+10s", now)
	if err != nil || err2 != nil || seg != (results.Segment{Index: 2, Count: 3}) || !at.Equal(now.Add(10*time.Second)) {
		t.Errorf("2/3 +10s: %v %v %v %v", seg, at, err, err2)
	}
	if at, err := ParseStartAt("2026-05-01T12:00:05.5Z", now); err != nil || !at.Equal(now.Add(5500*time.Millisecond)) {
		t.Errorf("RFC 3339: %v %v", at, err)
	}
	if seg, err := ParseSegment(""); err != nil || !seg.Whole() {
		t.Errorf("no segment: %v %v", seg, err)
	}
	if at, err := ParseStartAt("", now); err != nil || !at.IsZero() {
		t.Errorf("no start time: %v %v", at, err)
	}
	// An Indexed Job's pod 2 (0-based) is segment 3.
	t.Setenv(JobIndexEnv, "2")
	if seg, err := ParseSegment("auto/3"); err != nil || seg != (results.Segment{Index: 3, Count: 3}) {
		t.Errorf("auto/3 with index 2: %v %v", seg, err)
	}
	if _, err := ParseSegment("auto/2"); err == nil {
		t.Error("auto/2 with index 2: no error")
	}
	t.Setenv(JobIndexEnv, "")
	if _, err := ParseSegment("auto/3"); err == nil || !strings.Contains(err.Error(), JobIndexEnv) || !strings.Contains(err.Error(), TaskSlotEnv) {
		t.Errorf("auto/3 without the index: %v", err)
	}
	// A replicated Swarm service's task slot (1-based) is the segment.
	t.Setenv(TaskSlotEnv, "2")
	if seg, err := ParseSegment("auto/3"); err != nil || seg != (results.Segment{Index: 2, Count: 3}) {
		t.Errorf("auto/3 with slot 2: %v %v", seg, err)
	}
	t.Setenv(JobIndexEnv, "1")
	if _, err := ParseSegment("auto/3"); err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("auto/3 with an index and a slot: %v, want an error naming both", err)
	}
	t.Setenv(JobIndexEnv, "")
	// A replicated-job's first slot is 0: refused, saying why.
	for _, bad := range []string{"0", "x", "-1"} {
		t.Setenv(TaskSlotEnv, bad)
		if _, err := ParseSegment("auto/3"); err == nil || !strings.Contains(err.Error(), TaskSlotEnv) {
			t.Errorf("auto/3 with slot %q: %v, want an error naming %s", bad, err, TaskSlotEnv)
		}
	}
	t.Setenv(TaskSlotEnv, "4")
	if _, err := ParseSegment("auto/3"); err == nil {
		t.Error("auto/3 with slot 4: no error")
	}
	t.Setenv(TaskSlotEnv, "")
	for _, bad := range []string{"0/3", "4/3", "1/0", "x", "1/3/4"} {
		if _, err := ParseSegment(bad); err == nil || !strings.HasPrefix(err.Error(), "segment ") {
			t.Errorf("%q: %v, want an error naming the segment", bad, err)
		}
	}
	for _, bad := range []string{"+-1s", "tomorrow", "+soon"} {
		if _, err := ParseStartAt(bad, now); err == nil || !strings.HasPrefix(err.Error(), "start-at ") {
			t.Errorf("%q: %v, want an error naming start-at", bad, err)
		}
	}
}
