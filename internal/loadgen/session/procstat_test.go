package session_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/loadgen/summary"
	"github.com/meteorbench/meteorbench/internal/rusage"
)

// /proc/PID/stat's CPU of this very process agrees with getrusage within
// the ticks' rounding, after some work; a pid of no process is refused.
func TestProcCPU(t *testing.T) {
	before, err := session.ProcCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	r0 := rusage.CPU()
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
	}
	after, err := session.ProcCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	proc, ru := after-before, rusage.CPU()-r0
	t.Logf("300 ms busy: /proc %v, getrusage %v", proc, ru)
	if d := proc - ru; d > 3*summary.ClockTick || d < -3*summary.ClockTick {
		t.Errorf("/proc %v and getrusage %v differ by more than three ticks", proc, ru)
	}
	if _, err := session.ProcCPU(1 << 30); !errors.Is(err, session.ErrNoProcess) {
		t.Errorf("a pid of no process: %v", err)
	}
}
