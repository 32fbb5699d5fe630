package rusage

import "testing"

func TestCPUAdvancesWithWork(t *testing.T) {
	before := CPU()
	if before <= 0 {
		t.Fatalf("CPU() = %v before any work; a running process has used some", before)
	}
	// Spin until the counter moves: getrusage has microsecond resolution, so
	// this ends after a few microseconds of work on any machine.
	x := 0
	for i := 0; CPU() == before; i++ {
		x += i
	}
	if after := CPU(); after < before {
		t.Fatalf("CPU went backwards: %v -> %v", before, after)
	}
	_ = x
}
