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
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/cpuset"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/testproc"
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
	return testproc.Child(ctx, "TestServeHelperProcess", append(slices.Clip(env), serveChildEnv+"="+strings.Join(args, "\x1f"))...)
}

// startServeChild starts a child running args and returns it with a reader
// of its standard error.
func startServeChild(t *testing.T, env []string, args ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := serveChild(t, env, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewReader(stderr)
}

// runServeChild runs a child to completion.
func runServeChild(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runServeChildEnv(t, nil, args...)
}

// runServeChildEnv runs a child to completion with extra environment.
func runServeChildEnv(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := serveChild(t, env, args...)
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

var startLine = regexp.MustCompile(`^meteorbench serve: listening on (127\.0\.0\.1:[0-9]+) \(REST over HTTP/1\.1 and HTTP/2, gRPC, gRPC-Web and Connect; HTTP/3 on UDP too\)\n$`)

// TestServeProcess runs `meteorbench serve` as a real process: one start-up
// line naming the bound port, both protocols healthy, a token from the
// environment enforced, and a clean exit 0 on SIGTERM and on SIGINT.
func TestServeProcess(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, br := startServeChild(t, []string{server.TokenEnv + "=env-token"}, "serve", "--addr", "127.0.0.1:0")
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
	type badCase struct {
		args []string
		code int
		env  []string
		name string // what the line must name, when set
	}
	cases := []badCase{
		{[]string{"serve", "--nope"}, 2, nil, "--nope"},
		{[]string{"serve", "extra-arg"}, 2, nil, "extra-arg"},
		{[]string{"serve", "--addr", ln.Addr().String()}, 1, nil, ln.Addr().String()}, // the port is taken
		// A profiling endpoint everyone can reach, without a token.
		{[]string{"serve", "--pprof", "--addr", ":0"}, 2, []string{server.TokenEnv + "="}, "--pprof"},
	}
	// Each value is a usage error for its flag.
	for _, f := range []struct {
		cmd, flag string
		values    []string
	}{
		{"serve", "--log-level", []string{"loud"}},
		{"serve", "--max-body", []string{"0", "lots", "2GiB"}},
		{"serve", "--token", []string{"two words"}},
		{"serve", "--read-timeout", []string{"-1s"}},
		{"serve", "--shutdown-timeout", []string{"-1s"}},
		{"serve", "--max-streams", []string{"-1"}},
		{"serve", "--max-conns", []string{"-1", "many"}},
		{"serve", "--cpus", []string{"", "a", "3-1", "-1", "0,0", "0,", "1024"}},
		{"health", "--timeout", []string{"0s"}},
		{"health", "--addr", []string{"127.0.0.1:0"}}, // health dials: no port 0
	} {
		for _, v := range f.values {
			cases = append(cases, badCase{[]string{f.cmd, f.flag, v}, 2, nil, f.flag})
		}
	}
	// Addresses neither command takes, from --addr or from $METEORBENCH_ADDR.
	for _, cmd := range []string{"serve", "health"} {
		for _, addr := range []string{"nowhere", "127.0.0.1:99999", "127.0.0.1:-1", ":http", "bad host:80"} {
			cases = append(cases, badCase{[]string{cmd, "--addr", addr}, 2, nil, "--addr"})
		}
		cases = append(cases, badCase{[]string{cmd}, 2, []string{addrEnv + "=:99999"}, addrEnv})
	}
	// A bad token from the environment is named as its variable.
	cases = append(cases, badCase{[]string{"serve", "--addr", "127.0.0.1:0"}, 2, []string{server.TokenEnv + "=two words"}, "$" + server.TokenEnv + ": must be printable"})
	for _, tc := range cases {
		code, stdout, stderr := runServeChildEnv(t, tc.env, tc.args...)
		if code != tc.code {
			t.Errorf("%q (env %q): exit %d, want %d (stderr %q)", tc.args, tc.env, code, tc.code, stderr)
		}
		if !strings.HasPrefix(stderr, "meteorbench: ") || strings.Count(stderr, "\n") != 1 || stdout != "" {
			t.Errorf("%q: want one error line on stderr, got stdout %q stderr %q", tc.args, stdout, stderr)
		}
		if !strings.Contains(stderr, tc.name) {
			t.Errorf("%q: stderr %q, want it to name %s", tc.args, stderr, tc.name)
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

// TestHealthFollowsServeAddr: what the container's HEALTHCHECK relies on.
// serve takes its address from $METEORBENCH_ADDR and writes what it bound
// to $METEORBENCH_ADDR_FILE; health, given no --addr, finds the server
// through either, and the file wins over a stale $METEORBENCH_ADDR (the
// image's default when "serve --addr ..." overrides it on the command line).
func TestHealthFollowsServeAddr(t *testing.T) {
	for _, viaFlag := range []bool{false, true} {
		t.Run(map[bool]string{false: "env", true: "flag"}[viaFlag], func(t *testing.T) {
			file := t.TempDir() + "/addr"
			env := []string{addrFileEnv + "=" + file, addrEnv + "=127.0.0.1:0"}
			args := []string{"serve"}
			if viaFlag {
				env = []string{addrFileEnv + "=" + file, addrEnv + "=127.0.0.1:1"} // stale: nothing listens there
				args = append(args, "--addr", "127.0.0.1:0")
			}
			cmd, stderr := startServeChild(t, env, args...)
			defer func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}()
			line, err := stderr.ReadString('\n')
			m := startLine.FindStringSubmatch(line)
			if err != nil || m == nil {
				t.Fatalf("start-up line %q (%v)", line, err)
			}
			b, err := os.ReadFile(file)
			if err != nil || string(b) != m[1]+"\n" {
				t.Fatalf("address file: %q, %v; want %q", b, err, m[1]+"\n")
			}
			code, stdout, errOut := runServeChildEnv(t, env, "health")
			if code != 0 || !strings.Contains(stdout, m[1]+" is healthy") {
				t.Errorf("health with %q: exit %d, stdout %q, stderr %q", env, code, stdout, errOut)
			}
			if !viaFlag {
				code, stdout, errOut = runServeChildEnv(t, []string{addrEnv + "=" + m[1]}, "health")
				if code != 0 {
					t.Errorf("health with only $%s: exit %d, stdout %q, stderr %q", addrEnv, code, stdout, errOut)
				}
			}
			// --addr beats the file.
			code, _, _ = runServeChildEnv(t, env, "health", "--addr", "127.0.0.1:1", "--timeout", "5s")
			if code != 1 {
				t.Errorf("health --addr (nothing there) with an address file: exit %d, want 1", code)
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("after SIGTERM: %v", err)
			}
			if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("address file after exit: %v, want it removed", err)
			}
		})
	}
}

// TestServeAddrFileUnwritable: an address file that cannot be written (a
// read-only file system) costs one warning, not the server.
func TestServeAddrFileUnwritable(t *testing.T) {
	cmd, br := startServeChild(t, nil, "serve", "--addr", "127.0.0.1:0", "--addr-file", t.TempDir()+"/no/such/dir/addr")
	line, err := br.ReadString('\n')
	m := startLine.FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("start-up line %q (%v)", line, err)
	}
	warn, err := br.ReadString('\n')
	if err != nil || !strings.Contains(warn, "level=WARN") || !strings.Contains(warn, "addr-file") {
		t.Errorf("second line %q (%v), want a warning about the address file", warn, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), serveHangGuard)
	defer cancel()
	if err := server.Check(ctx, m[1]); err != nil {
		t.Errorf("health: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(br)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
}

// cpusOrSkip is the CPUs this process may use; it skips the test off Linux
// (--cpus needs it).
func cpusOrSkip(t *testing.T) cpuset.Set {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("--cpus needs Linux")
	}
	avail, err := cpuset.Available()
	if err != nil {
		t.Fatal(err)
	}
	return avail
}

// TestServeCPUs runs `serve --cpus` as a real process and checks from
// outside that the process and every one of its threads may run only on
// that CPU, once it has served both protocols, and that the start-up line
// says so (and still gives run the address).
func TestServeCPUs(t *testing.T) {
	avail := cpusOrSkip(t)
	cpu := strconv.Itoa(avail.CPUs()[0]) // 0 unless this test itself runs pinned
	cmd, br := startServeChild(t, nil, "serve", "--addr", "127.0.0.1:0", "--cpus", cpu)
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	line, err := br.ReadString('\n')
	want := regexp.MustCompile(`^meteorbench serve: listening on (127\.0\.0\.1:[0-9]+) \(REST over HTTP/1\.1 and HTTP/2, gRPC, gRPC-Web and Connect; HTTP/3 on UDP too\), pinned to CPUs ` + cpu + ` \(GOMAXPROCS 1\)\n$`)
	m := want.FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("start-up line %q (%v), want it to match %v", line, err, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), serveHangGuard)
	defer cancel()
	if err := server.Check(ctx, m[1]); err != nil { // gRPC and REST health
		t.Fatalf("health: %v", err)
	}

	pid := cmd.Process.Pid
	if got := testproc.CPUsAllowed(t, testproc.Status(pid)); got != cpu {
		t.Errorf("process %d: Cpus_allowed_list %q, want %q", pid, got, cpu)
	}
	tasks, err := testproc.ThreadStatuses(pid)
	if err != nil || len(tasks) < 2 {
		t.Fatalf("threads of %d: %q, %v", pid, tasks, err)
	}
	for _, st := range tasks {
		if got := testproc.CPUsAllowed(t, st); got != cpu {
			t.Errorf("%s: Cpus_allowed_list %q, want %q", st, got, cpu)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(br)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v (stderr %q)", err, rest)
	}
}

// TestServeCPUsUnavailable: a CPU this process may not use is a usage
// error (exit 2) in one line naming the CPUs it may use.
func TestServeCPUsUnavailable(t *testing.T) {
	avail := cpusOrSkip(t)
	cpus := avail.CPUs()
	bad := strconv.Itoa(cpus[len(cpus)-1] + 1)
	code, stdout, stderr := runServeChild(t, "serve", "--addr", "127.0.0.1:0", "--cpus", bad)
	wantErr := "meteorbench: --cpus " + bad + ": cpu " + bad + " is not available: this process may use " + avail.String() + "\n"
	if code != 2 || stdout != "" || stderr != wantErr {
		t.Errorf("--cpus %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", bad, code, stdout, stderr, wantErr)
	}
}

// A TLS server's address file says so, and health checks it over TLS: the
// container's HEALTHCHECK stays healthy when serve runs with TLS.
func TestHealthFollowsTLS(t *testing.T) {
	file := filepath.Join(t.TempDir(), "addr")
	env := []string{addrFileEnv + "=" + file}
	cmd, stderr := startServeChild(t, env, "serve", "--addr", "127.0.0.1:0", "--tls-self-signed")
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	var addr string
	for addr == "" {
		line, err := stderr.ReadString('\n')
		if err != nil {
			t.Fatalf("no start-up line: %v", err)
		}
		if _, rest, ok := strings.Cut(line, "meteorbench serve: listening on "); ok {
			addr, _, _ = strings.Cut(rest, " ")
		}
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != addr+" tls\n" {
		t.Fatalf("address file %q (%v), want %q", b, err, addr+" tls\n")
	}
	if code, stdout, errOut := runServeChildEnv(t, env, "health"); code != 0 {
		t.Errorf("health from the file: exit %d, %q %q", code, stdout, errOut)
	}
	if code, _, _ := runServeChildEnv(t, nil, "health", "--addr", addr, "--timeout", "5s"); code != 1 {
		t.Errorf("plaintext health on the TLS port: exit %d, want 1", code)
	}
	if code, stdout, errOut := runServeChildEnv(t, nil, "health", "--addr", addr, "--tls"); code != 0 {
		t.Errorf("health --tls: exit %d, %q %q", code, stdout, errOut)
	}
}
