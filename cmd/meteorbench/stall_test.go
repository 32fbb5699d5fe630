package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/results"
)

// Timing-dependent (go test -run Timing): a server stopped (SIGSTOP) for
// 5 s across a cell's end: the call it holds is still running at the
// cell's hard end, so it is an error of class abandoned, the cell is
// suspect, and run exits non-zero with its results written. (It used to be
// dropped: 0 errors, a 4.5 ms max, exit 0.) The stop must land within the
// cell: a busy machine can delay it past the cell's end, so up to three
// attempts, each attempt's figures logged.
func TestTimingRunServerStalled(t *testing.T) {
	bin := meteorbenchBinary(t)
	srv, stderr := startServeChild(t, nil, "serve", "--addr", "127.0.0.1:0")
	t.Cleanup(func() { srv.Process.Signal(syscall.SIGCONT); srv.Process.Kill(); srv.Wait() })
	var addr string
	for addr == "" {
		line, err := stderr.ReadString('\n')
		if err != nil {
			t.Fatalf("serve's start-up line: %v", err)
		}
		if m := startLine.FindStringSubmatch(line); m != nil {
			addr = m[1]
		}
	}
	go func() { // drain
		for {
			if _, err := stderr.ReadString('\n'); err != nil {
				return
			}
		}
	}()
	const attempts = 3
	for attempt := 1; attempt <= attempts; attempt++ {
		c, errb, err := stallRun(t, bin, srv.Process, addr)
		t.Logf("attempt %d: exit %v; %d calls, errors %v; suspect %q", attempt, err, c.Calls, c.ErrorClasses, c.Suspect)
		if c.ErrorClasses[results.ClassAbandoned] == 0 {
			continue // the stop missed the cell's hard end
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Errorf("run exited %v with the server stalled across the cell's end, want non-zero\nstderr: %s", err, errb)
		}
		if c.Errors == 0 {
			t.Errorf("errors %d %v, want the stalled call as an error of class %s", c.Errors, c.ErrorClasses, results.ClassAbandoned)
		}
		if len(c.Suspect) == 0 || !strings.Contains(strings.Join(c.Suspect, " "), "stalled") {
			t.Errorf("suspect %q, want the stall named", c.Suspect)
		}
		if !strings.Contains(errb, "cannot be trusted") {
			t.Errorf("stderr does not say the cell cannot be trusted: %s", errb)
		}
		return
	}
	t.Errorf("no attempt of %d had the stalled call counted as %s (figures above)", attempts, results.ClassAbandoned)
}

// stallRun runs one 3 s cell against the server at addr and stops the
// server (proc) for 5 s a second into the cell; it returns the cell, run's
// stderr and its exit.
func stallRun(t *testing.T, bin string, proc *os.Process, addr string) (results.Cell, string, error) {
	t.Helper()
	before := counted(addr)
	cmd := exec.Command(bin, "run", "--target", addr, "--scenario", "small", "--proto", "grpc",
		"--duration", "3s", "--repeat", "1", "--warmup", "0", "--format", "json", "--quiet")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A second into the cell (its calls counted by the server, past the
	// contract probe's one: however long run took to start), the server
	// stops for 5 s: until about 1 s past the cell's hard end (3 s + 2 s
	// of grace).
	for i := 0; counted(addr) < before+50; i++ {
		if i > 1000 {
			t.Fatal("the run made no calls within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(time.Second)
	proc.Signal(syscall.SIGSTOP)
	time.Sleep(5 * time.Second)
	proc.Signal(syscall.SIGCONT)
	err := cmd.Wait()
	var res results.Result
	if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
		t.Fatalf("results not written: %v\nstdout: %.500s\nstderr: %s", jerr, out.String(), errb.String())
	}
	if len(res.Cells) != 1 {
		t.Fatalf("%d cells, want 1", len(res.Cells))
	}
	return res.Cells[0], errb.String(), err
}
