package session_test

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
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
// the child's CPU counted. The child gets what a busy machine leaves it:
// read until it has had three clock ticks (at most 20 s).
func TestTreeCPU(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sh -c 'while :; do :; done' & child=$!; sleep 20; kill $child")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	var own, tree time.Duration
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var err error
		if own, err = session.ProcCPU(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		if tree, err = session.TreeCPU(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		if tree >= 3*summary.ClockTick {
			break
		}
	}
	t.Logf("a busy child: the shell %v, its tree %v", own, tree)
	if own > 2*summary.ClockTick || tree < 3*summary.ClockTick {
		t.Errorf("the waiting shell used %v, its tree %v: want the busy child's CPU in the tree's only", own, tree)
	}
}
