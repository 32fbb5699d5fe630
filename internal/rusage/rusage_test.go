package rusage

import (
	"testing"
	"time"
)

// The reason this package exists: /proc/self/stat counts CPU in 10 ms clock
// ticks, getrusage in microseconds. Work is done until the counter moves;
// the step it moves by must be far below a tick. (Only this process's own
// CPU can enter the step, so a busy machine cannot inflate it: another
// process's work does not count, and a preempted loop uses no CPU.)
func TestCPUHasSubTickResolution(t *testing.T) {
	const tick = 10 * time.Millisecond
	var smallest time.Duration
	for range 5 {
		before := CPU()
		if before <= 0 {
			t.Fatalf("CPU() = %v; a running process has used some", before)
		}
		after := before
		for i := 0; after == before; i++ {
			if i > 1e9 {
				t.Fatal("CPU() did not move after 1e9 iterations of work")
			}
			after = CPU()
		}
		if after < before {
			t.Fatalf("CPU went backwards: %v -> %v", before, after)
		}
		if step := after - before; smallest == 0 || step < smallest {
			smallest = step
		}
	}
	if smallest >= tick/2 {
		t.Fatalf("smallest step of CPU() is %v: tick resolution, not getrusage's microseconds", smallest)
	}
}
