package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/results"
)

// bigDocument writes a document of n cells (basic.json's, at distinct batch
// sizes): a few seconds of chart drawing.
func bigDocument(t *testing.T, n int) string {
	t.Helper()
	r, err := results.ReadFile(fixtures + "basic.json")
	if err != nil {
		t.Fatal(err)
	}
	base := r.Cells
	r.Cells = nil
	for i := 0; len(r.Cells) < n; i++ {
		for _, c := range base {
			c.Batch = 1000 + i
			r.Cells = append(r.Cells, c)
		}
	}
	r.Verdicts = []results.Verdict{} // not recomputed: the charts are the work
	var buf bytes.Buffer
	if err := results.Write(&buf, r); err != nil {
		t.Fatal(err)
	}
	return writeTemp(t, "big.json", buf.String())
}

// Timing-dependent (go test -run Timing): a signal stops report in the
// middle of drawing charts within 2 s, with the signal's conventional
// status, one line on stderr and no file (or temporary file) left. Before,
// SIGTERM waited for the drawing to end. The status, the line and the
// files are checked every time; the 2 s bound, which a busy machine can
// miss once, gets up to three attempts, each attempt's time logged.
func TestTimingReportStopsOnSignal(t *testing.T) {
	bin := meteorbenchBinary(t)
	doc := bigDocument(t, 4000)
	for _, tt := range []struct {
		sig  syscall.Signal
		code int
		name string
	}{{syscall.SIGTERM, 143, "SIGTERM"}, {syscall.SIGINT, 130, "SIGINT"}} {
		t.Run(tt.name, func(t *testing.T) {
			const attempts = 3
			for attempt := 1; attempt <= attempts; attempt++ {
				took := stopReportWith(t, bin, doc, tt.sig, tt.code, tt.name)
				t.Logf("attempt %d: stopped %v after %s", attempt, took.Round(time.Millisecond), tt.name)
				if took <= 2*time.Second {
					return
				}
			}
			t.Errorf("stopped more than 2 s after %s in all %d attempts (times above)", tt.name, attempts)
		})
	}
}

// stopReportWith starts report drawing charts of doc, sends sig once it is
// mid-work, checks how it ended (status code, one line on stderr, no file
// left) and returns how long it took to stop after the signal.
func stopReportWith(t *testing.T, bin, doc string, sig syscall.Signal, code int, name string) time.Duration {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(bin, "report", doc, "--format", "svg", "--out", filepath.Join(dir, "r1"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	// Mid-work: once it has used some CPU (reading, then drawing).
	waitCPU(t, cmd.Process.Pid, 300*time.Millisecond)
	sent := time.Now()
	cmd.Process.Signal(sig)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("report did not stop within 10 s of the signal")
	}
	took := time.Since(sent)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != code {
		t.Errorf("exit %v, want status %d", err, code)
	}
	// One line saying so; a signal that lands while the file is being
	// written names the file too.
	msg := stderr.String()
	said := strings.Contains(msg, "interrupted ("+name+")") || strings.Contains(msg, context.Canceled.Error())
	if !strings.HasPrefix(msg, "meteorbench: report: ") || !said || strings.Count(msg, "\n") != 1 {
		t.Errorf("stderr %q, want one line saying report was interrupted (%s)", msg, name)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if hidden, _ := filepath.Glob(filepath.Join(dir, ".*")); len(hidden) > 0 {
		t.Errorf("left behind: %v", hidden)
	}
	return took
}

// waitCPU waits until process pid has used at least d of CPU time.
func waitCPU(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatalf("the process ended before the signal: %v", err)
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
		var utime, stime int64
		fmt.Sscan(f[11], &utime)
		fmt.Sscan(f[12], &stime)
		if time.Duration(utime+stime)*10*time.Millisecond >= d { // clock ticks of 10 ms
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the process used no CPU")
}

// The exit status follows the signal that stopped a command, whatever the
// command returned; a command that ended cleanly exits 0.
func TestExitCodeOfSignal(t *testing.T) {
	term := signalled{syscall.SIGTERM}
	intr := signalled{syscall.SIGINT}
	for _, tt := range []struct {
		err, cause error
		want       int
	}{
		{nil, term, 0},
		{errors.New("x"), nil, 1},
		{usageError{errors.New("x")}, nil, 2},
		{&exitError{130, errors.New("interrupted")}, intr, 130},
		{&exitError{130, errors.New("interrupted")}, term, 143},
		{fmt.Errorf("report: %w", term), term, 143},
		{errors.New("x"), intr, 130},
	} {
		if got := exitCode(tt.err, tt.cause); got != tt.want {
			t.Errorf("exitCode(%v, %v) = %d, want %d", tt.err, tt.cause, got, tt.want)
		}
	}
}
