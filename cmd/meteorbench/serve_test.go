package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// serveChildEnv carries the arguments of a child meteorbench process, which
// is this test binary re-run as TestServeHelperProcess.
const serveChildEnv = "METEORBENCH_SERVE_TEST_CHILD"

const serveHangGuard = 30 * time.Second

// TestServeHelperProcess is not a test: it runs main with the arguments in
// $METEORBENCH_SERVE_TEST_CHILD (separated by \x1f), as a real process.
func TestServeHelperProcess(t *testing.T) {
	args, ok := os.LookupEnv(serveChildEnv)
	if !ok {
		t.Skip("runs only as a child of the serve/health command tests")
	}
	os.Args = append([]string{"meteorbench"}, strings.Split(args, "\x1f")...)
	main()
}

// serveChild prepares a child meteorbench process running args.
func serveChild(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), serveHangGuard)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestServeHelperProcess$")
	cmd.Env = append(append(os.Environ(), env...), serveChildEnv+"="+strings.Join(args, "\x1f"))
	return cmd
}

// runServeChild runs a child to completion.
func runServeChild(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := serveChild(t, nil, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("running %q: %v", args, err)
	}
	return code, out.String(), errb.String()
}

var startLine = regexp.MustCompile(`^meteorbench serve: listening on (127\.0\.0\.1:[0-9]+) \(REST over HTTP/1\.1 and gRPC over HTTP/2\)\n$`)

// TestServeProcess runs `meteorbench serve` as a real process: one start-up
// line naming the bound port, both protocols healthy, a token from the
// environment enforced, and a clean exit 0 on SIGTERM and on SIGINT.
func TestServeProcess(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := serveChild(t, []string{tokenEnv + "=env-token"}, "serve", "--addr", "127.0.0.1:0")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(stderr)
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the start-up line: %v (got %q)", err, line)
			}
			m := startLine.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("start-up line %q does not match %v", line, startLine)
			}
			addr := m[1]

			ctx, cancel := context.WithTimeout(context.Background(), serveHangGuard)
			defer cancel()
			if err := server.Check(ctx, addr); err != nil {
				t.Fatalf("health: %v", err)
			}
			for _, tc := range []struct {
				auth string
				want int
			}{{"", http.StatusUnauthorized}, {"Bearer env-token", http.StatusOK}} {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+api.PathVersion, nil)
				if tc.auth != "" {
					req.Header.Set("Authorization", tc.auth)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.want {
					t.Errorf("Authorization %q: %s, want %d", tc.auth, resp.Status, tc.want)
				}
			}

			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(br)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("after %v: %v (stderr %q)", sig, err, rest)
			}
			if len(rest) != 0 {
				t.Errorf("stderr after the start-up line: %q, want nothing", rest)
			}
		})
	}
}

func TestServeBadFlags(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"serve", "--log-level", "loud"}, 2},
		{[]string{"serve", "--max-body", "0"}, 2},
		{[]string{"serve", "--max-body", "lots"}, 2},
		{[]string{"serve", "--addr", "nowhere"}, 2},
		{[]string{"serve", "--token", "two words"}, 2},
		{[]string{"serve", "--read-timeout", "-1s"}, 2},
		{[]string{"serve", "--nope"}, 2},
		{[]string{"serve", "extra-arg"}, 2},
		{[]string{"serve", "--addr", ln.Addr().String()}, 1}, // the port is taken
		{[]string{"health", "--timeout", "0s"}, 2},
		{[]string{"health", "--addr", "nowhere"}, 2},
	} {
		code, stdout, stderr := runServeChild(t, tc.args...)
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", tc.args, code, tc.code, stderr)
		}
		if !strings.HasPrefix(stderr, "meteorbench: ") || strings.Count(stderr, "\n") != 1 || stdout != "" {
			t.Errorf("%q: want one error line on stderr, got stdout %q stderr %q", tc.args, stdout, stderr)
		}
	}
}

func TestHealthCommand(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	_, port, _ := net.SplitHostPort(addr)
	for _, a := range []string{addr, ":" + port, "0.0.0.0:" + port} {
		code, stdout, stderr := runServeChild(t, "health", "--addr", a)
		if code != 0 || stderr != "" || strings.Count(stdout, "\n") != 1 || !strings.Contains(stdout, "healthy") {
			t.Errorf("health --addr %s: exit %d, stdout %q, stderr %q", a, code, stdout, stderr)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	code, stdout, stderr := runServeChild(t, "health", "--addr", closed, "--timeout", "5s")
	if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "not healthy") {
		t.Errorf("health against a closed port: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestByteSizeFlag(t *testing.T) {
	for in, want := range map[string]int64{
		"1": 1, "1048576": 1 << 20, "8MiB": 8 << 20, "512KiB": 512 << 10, "512kib": 512 << 10,
		"1GiB": 1 << 30, "2MB": 2e6, "10B": 10, " 3 MiB ": 3 << 20,
	} {
		var b serveByteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "MiB", "1.5MiB", "1TiB", "9223372036854775807GiB", "x"} {
		var b serveByteSize
		if err := b.Set(in); err == nil {
			t.Errorf("Set(%q) = %d, want an error", in, b)
		}
	}
	if s := serveByteSize(8 << 20); s.String() != "8MiB" {
		t.Errorf("String() = %q", s.String())
	}
}
