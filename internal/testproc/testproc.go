// Package testproc reads, for tests, what Linux says about a process from
// outside it (the CPUs it and each of its threads may run on, its child
// processes), and starts the test binary again as a child process.
package testproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// HangGuard bounds a test's wait for a child process: far beyond what a
// healthy child takes, so reaching it means a hang, not a slow machine.
const HangGuard = 30 * time.Second

// Status is the /proc status file of process pid.
func Status(pid int) string { return fmt.Sprintf("/proc/%d/status", pid) }

// ThreadStatuses are the /proc status files of process pid's threads.
func ThreadStatuses(pid int) ([]string, error) {
	return filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
}

// CPUsAllowed returns the Cpus_allowed_list field of a /proc status file,
// or "" when the file is gone (its process or thread has exited).
func CPUsAllowed(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("%s has no Cpus_allowed_list", path)
	return ""
}

// ChildOf returns the pid of a child process of pid whose command line
// contains arg, or 0 when there is none.
func ChildOf(pid int, arg string) int {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		cpid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cpid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cpid)); bytes.Contains(cmdline, []byte(arg)) {
			return cpid
		}
	}
	return 0
}

// Child is this test binary re-run as the one test named test (a helper
// process that acts as the child when it finds its variable in env), with
// env added to this process's environment; ctx bounds it.
func Child(ctx context.Context, test string, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// ChildEnv is the value of the variable name, which makes this test binary a
// helper process for the test parent; without it the calling test skips
// (it runs only as that child).
func ChildEnv(t testing.TB, name, parent string) string {
	v, ok := os.LookupEnv(name)
	if !ok {
		t.Skip("runs only as a child of " + parent)
	}
	return v
}

// StartPiped starts cmd with a pipe to its standard input and one from its
// standard output.
func StartPiped(t testing.TB, cmd *exec.Cmd) (stdin io.WriteCloser, stdout io.ReadCloser) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err = cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return stdin, stdout
}
