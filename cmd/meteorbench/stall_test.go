package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/results"
)

// A server stopped (SIGSTOP) for 5 s across a cell's end: the call it
// holds is still running at the cell's hard end, so it is an error of
// class abandoned, the cell is suspect, and run exits non-zero with its
// results written. (It used to be dropped: 0 errors, a 4.5 ms max, exit
// 0.)
func TestRunServerStalled(t *testing.T) {
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

	cmd := exec.Command(bin, "run", "--target", addr, "--scenario", "small", "--proto", "grpc",
		"--duration", "3s", "--repeat", "1", "--warmup", "0", "--format", "json", "--quiet")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A second into the cell (its calls counted by the server, past the
	// contract probe's one: however long run took to start, where a fixed
	// sleep from the start could miss the cell on a busy machine), the
	// server stops for 5 s: until about 1 s past the cell's hard end (3 s
	// + 2 s of grace).
	for i := 0; counted(addr) < 50; i++ {
		if i > 1000 {
			t.Fatal("the run made no calls within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(time.Second)
	srv.Process.Signal(syscall.SIGSTOP)
	time.Sleep(5 * time.Second)
	srv.Process.Signal(syscall.SIGCONT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("run exited %v with the server stalled across the cell's end, want non-zero\nstderr: %s", err, errb.String())
	}
	var res results.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("results not written: %v\nstdout: %.500s\nstderr: %s", err, out.String(), errb.String())
	}
	if len(res.Cells) != 1 {
		t.Fatalf("%d cells, want 1", len(res.Cells))
	}
	c := res.Cells[0]
	if c.ErrorClasses[results.ClassAbandoned] == 0 || c.Errors == 0 {
		t.Errorf("errors %d %v, want the stalled call as an error of class %s", c.Errors, c.ErrorClasses, results.ClassAbandoned)
	}
	if len(c.Suspect) == 0 || !strings.Contains(strings.Join(c.Suspect, " "), "stalled") {
		t.Errorf("suspect %q, want the stall named", c.Suspect)
	}
	if !strings.Contains(errb.String(), "cannot be trusted") {
		t.Errorf("stderr does not say the cell cannot be trusted: %s", errb.String())
	}
	t.Logf("exit %v; %d calls, errors %v; suspect %q", err, c.Calls, c.ErrorClasses, c.Suspect)
}
