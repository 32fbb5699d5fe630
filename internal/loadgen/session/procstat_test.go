package session_test

import (
	"errors"
	"os"
	"os/exec"
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

// A proxy's CPU is its whole process tree's (nginx's master does little,
// its workers the work): a shell that only waits, with a busy child, has
// the child's CPU counted.
func TestTreeCPU(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sh -c 'while :; do :; done' & child=$!; sleep 2; kill $child")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	time.Sleep(time.Second)
	own, err := session.ProcCPU(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := session.TreeCPU(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("1 s of a busy child: the shell %v, its tree %v", own, tree)
	if own > 2*summary.ClockTick || tree < 3*summary.ClockTick { // the child gets little of a busy machine, but some
		t.Errorf("the waiting shell used %v, its tree %v: want the busy child's CPU in the tree's only", own, tree)
	}
}
