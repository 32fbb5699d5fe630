package engine

import (
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/loadgen/pace"
)

// N strided pacers make exactly the calls of the one schedule, at the same
// intended times: the segments' schedules interleave, none coincide.
func TestSegmentSchedulesInterleave(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7} {
		whole := pace.Constant{Rate: 333, Duration: 2 * time.Second}
		want := intendedAll(whole)
		got := map[time.Duration]int{}
		total := 0
		for i := range n {
			p := pace.Constant{Rate: 333, Duration: 2 * time.Second, Stride: uint64(n), Phase: uint64(i)}
			if n == 1 {
				p.Stride = 0
			}
			for _, d := range intendedAll(p) {
				got[d]++
				total++
			}
			if due := dueBefore(p, 2*time.Second); int(due) != len(intendedAll(p)) {
				t.Errorf("n %d, phase %d: dueBefore %d, want %d", n, i, due, len(intendedAll(p)))
			}
		}
		if total != len(want) {
			t.Fatalf("n %d: %d calls, want %d", n, total, len(want))
		}
		for _, d := range want {
			if got[d] != 1 {
				t.Fatalf("n %d: the call due at %v is made %d times", n, d, got[d])
			}
		}
	}
}

func intendedAll(p pace.Constant) []time.Duration {
	var out []time.Duration
	for k := uint64(0); ; k++ {
		if _, stop := p.Pace(0, k); stop {
			return out
		}
		out = append(out, p.Intended(k))
	}
}
