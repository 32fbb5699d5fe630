package pace

import (
	"testing"
	"time"
)

func TestConstantPace(t *testing.T) {
	c := Constant{Rate: 100, Duration: time.Second} // one call every 10 ms
	tests := []struct {
		name    string
		elapsed time.Duration
		hits    uint64
		wait    time.Duration
		stop    bool
	}{
		{"first call at once", 0, 0, 0, false},
		{"second waits a full interval", 0, 1, 10 * time.Millisecond, false},
		{"partly through the interval", 4 * time.Millisecond, 1, 6 * time.Millisecond, false},
		{"exactly due", 10 * time.Millisecond, 1, 0, false},
		{"ahead of schedule waits", 500 * time.Millisecond, 60, 100 * time.Millisecond, false},
		{"behind after a stall: no wait", 500 * time.Millisecond, 10, 0, false},
		{"last call of the window", 995 * time.Millisecond, 99, 0, false},
		{"stop at the duration", 995 * time.Millisecond, 100, 0, true},
		{"stop past the duration even when behind", 2 * time.Second, 100, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wait, stop := c.Pace(tt.elapsed, tt.hits)
			if wait != tt.wait || stop != tt.stop {
				t.Errorf("Pace(%v, %d) = (%v, %v), want (%v, %v)", tt.elapsed, tt.hits, wait, stop, tt.wait, tt.stop)
			}
		})
	}
}

// simulate drives a pacer with a fake clock: each call takes cost, and the
// call numbered stallAt (if any) takes stall. It returns the number of calls
// started and the elapsed time at which the pacer stopped.
func simulate(p Pacer, cost time.Duration, stallAt uint64, stall time.Duration) (hits uint64, elapsed time.Duration, lateAfterStall uint64) {
	for {
		wait, stop := p.Pace(elapsed, hits)
		if stop {
			return hits, elapsed, lateAfterStall
		}
		elapsed += wait
		if elapsed > p.Intended(hits) {
			lateAfterStall++
		}
		if hits == stallAt && stall > 0 {
			elapsed += stall
		} else {
			elapsed += cost
		}
		hits++
	}
}

func TestConstantExactRateOverLongWindow(t *testing.T) {
	for _, rate := range []float64{1, 7, 1000, 3333.3, 25000} {
		c := Constant{Rate: rate, Duration: 100 * time.Second}
		hits, _, late := simulate(c, 0, 0, 0)
		want := uint64(rate * 100)
		// A window [0, D) holds ceil(rate*D) due times; allow the float rounding of one.
		if hits < want || hits > want+1 {
			t.Errorf("rate %v over 100 s: %d calls, want %d", rate, hits, want)
		}
		if late != 0 {
			t.Errorf("rate %v: %d late calls with free calls", rate, late)
		}
	}
}

func TestConstantCatchesUpAfterStall(t *testing.T) {
	c := Constant{Rate: 1000, Duration: 10 * time.Second}
	// Calls cost 100 µs (10% of the interval); call 500 stalls for 2 s.
	hits, elapsed, late := simulate(c, 100*time.Microsecond, 500, 2*time.Second)
	if hits != 10000 {
		t.Errorf("after a stall: %d calls, want all 10000 of the schedule", hits)
	}
	// 2000 calls fell due during the stall; they are sent back to back
	// (100 µs each, 10x the rate) until the schedule is caught up.
	if late < 2000 || late > 2300 {
		t.Errorf("%d calls started late, want about 2000-2222", late)
	}
	if elapsed > 10*time.Second+time.Millisecond {
		t.Errorf("stopped at %v, want by the 10 s duration", elapsed)
	}
}

func TestConstantStopsAtCallCount(t *testing.T) {
	c := Constant{Rate: 50, Calls: 123}
	hits, elapsed, _ := simulate(c, time.Millisecond, 0, 0)
	if hits != 123 {
		t.Errorf("%d calls, want 123", hits)
	}
	if want := c.Intended(122) + time.Millisecond; elapsed != want {
		t.Errorf("stopped at %v, want %v", elapsed, want)
	}
}

func TestConstantIntended(t *testing.T) {
	c := Constant{Rate: 4}
	for hits, want := range []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond} {
		if got := c.Intended(uint64(hits)); got != want {
			t.Errorf("Intended(%d) = %v, want %v", hits, got, want)
		}
	}
}

func TestConstantValidate(t *testing.T) {
	for _, c := range []Constant{{Rate: 0}, {Rate: -1}, {Rate: 1, Duration: -time.Second}} {
		if c.Validate() == nil {
			t.Errorf("%+v: Validate() = nil, want an error", c)
		}
	}
	if err := (Constant{Rate: 0.5}).Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
}
