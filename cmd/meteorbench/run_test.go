package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/cpuset"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/testproc"
)

// Every bad flag fails at parse time: one line, exit status 2, no load.
// The target is a closed port, so a flag that slipped through would fail
// differently (unreachable, exit 1) instead of loading anything.
func TestRunBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--scenario", "huge"},
		{"--scenario", "small,small"},
		{"--proto", "soap"},
		{"--proto", ""},
		{"--link", "fast"},
		{"--link", "100mbit"},
		{"--link", "vps,100mbit/20ms"},
		{"--batch", "0"},
		{"--batch", "abc"},
		{"--concurrency", "0"},
		{"--concurrency", "1,-4"},
		{"--connections", "-1"},
		{"--rate", "-1"},
		{"--rate", "NaN"},
		{"--duration", "1s", "--iterations", "5"},
		{"--duration", "0"},
		{"--iterations", "0"},
		{"--warmup", "-1s"},
		{"--timeout", "0"},
		{"--repeat", "0"},
		{"--format", "xml"},
		{"--format", "json,json"},
		{"--report", "result.pdf"},
		{"--target", "nohost"},
		{"--out", "/proc/version/x/run1"},
		{"--report", "/proc/version/r.html"},
		{"--segment", "4/3"},
		{"--segment", "two"},
		{"--start-at", "noon"},
		{"--json-codec", "goccy"},
		{"--json-codec", "v2,v2"},
		{"--engine", "turbo"},
		{"--engine", "lean,lean"},
		{"--engine", "lean", "--compress", "gzip"},
		{"--max-workers", "100"},
		{"--rate", "100", "--max-workers", "-1"},
		{"--server-pprof", "http://127.0.0.1:1/debug/pprof/"},
		{"--profile", "--server-pprof", "ftp://127.0.0.1:1/"},
		{"--profile", "--server-pprof", "http://127.0.0.1:1/metrics"},
		{"--profile=/proc/version"},
		{"--frobnicate"},
		{"extra-argument"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := []string{"run"}
			if !strings.HasPrefix(args[0], "--target") {
				cmd = append(cmd, "--target", "127.0.0.1:1")
			}
			wantNamed(t, wantUsageError(t, append(cmd, args...)...), args)
		})
	}
}

// wantNamed wants msg, the usage error of a command given flags, to name
// something of flags as the user typed it (a flag, or an argument that is
// no flag's value), so its one line says where to look.
func wantNamed(t *testing.T, msg string, flags []string) {
	t.Helper()
	var names []string
	for i, f := range flags {
		if name, ok := strings.CutPrefix(f, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			names = append(names, "--"+name)
		} else if i == 0 || !strings.HasPrefix(flags[i-1], "--") {
			names = append(names, f)
		}
	}
	if !slices.ContainsFunc(names, func(n string) bool { return strings.Contains(msg, n) }) {
		t.Errorf("error %q: want it to name one of %q", msg, names)
	}
}

// wantUsageError runs the command and wants a usage error: exit status 2,
// a one-line message, nothing written before it. It returns the message.
func wantUsageError(t *testing.T, args ...string) string {
	t.Helper()
	_, stderr, err := execute(t, args...)
	if code := exitCodeQuiet(err); code != 2 {
		t.Fatalf("exit status %d (%v), want 2", code, err)
	}
	msg := err.Error()
	if msg == "" || strings.Contains(msg, "\n") {
		t.Errorf("error %q, want one line", msg)
	}
	if stderr != "" {
		t.Errorf("stderr %q: the command did work before failing", stderr)
	}
	return msg
}

// wantUsageErrors runs wantUsageError on cmd followed by each of flagSets,
// a subtest each, named by its flags.
func wantUsageErrors(t *testing.T, cmd []string, flagSets [][]string) {
	t.Helper()
	for _, flags := range flagSets {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			wantNamed(t, wantUsageError(t, append(slices.Clip(cmd), flags...)...), flags)
		})
	}
}

// exitCodeQuiet is exitCode without the printing.
func exitCodeQuiet(err error) int {
	var ee *exitError
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

// `run` in-process against the real server: every scenario and protocol,
// one file per format, the command line recorded with the token masked.
func TestRunCommand(t *testing.T) {
	addr := servertest.Start(t, server.Config{Token: "s3cret"})
	prefix := filepath.Join(t.TempDir(), "res")
	_, stderr, err := execute(t, "run", "--target", addr, "--token", "s3cret", "--proto", "all", "--scenario", "all",
		"--batch", "2", "--iterations", "1", "--warmup", "0", "--format", "json,csv,table,markdown", "--out", prefix,
		"--report", prefix+"-report.html")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	res, err := results.ReadFile(prefix + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 4*len(api.Protocols()) || res.Stop.Reason != results.StopCompleted { // all: the five
		t.Fatalf("%d cells, stop reason %q", len(res.Cells), res.Stop)
	}
	for _, c := range res.Cells {
		if c.Calls != 2 || c.Errors != 0 {
			t.Errorf("%s: %d calls, %d errors", c.Key(), c.Calls, c.Errors)
		}
	}
	flags := strings.Join(res.Env.Flags, " ")
	if !strings.Contains(flags, "--iterations=1") || !strings.Contains(flags, "--token=***") {
		t.Errorf("flags %q", flags)
	}
	// --report writes the self-contained HTML page with the charts inline.
	page, err := os.ReadFile(prefix + "-report.html")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte("<svg")) || !bytes.Contains(page, []byte(res.Env.Target)) {
		t.Errorf("--report page lacks inline charts or the target (%d bytes)", len(page))
	}
	// Each file holds its format of the whole run: every cell, the summary.
	files := map[string][]byte{}
	for _, ext := range []string{".json", ".csv", ".txt", ".md", "-report.html"} {
		b, err := os.ReadFile(prefix + ext)
		if err != nil {
			t.Errorf("%s: %v", ext, err)
		}
		if bytes.Contains(b, []byte("s3cret")) {
			t.Errorf("%s contains the token", ext)
		}
		files[ext] = b
	}
	rows, err := csv.NewReader(bytes.NewReader(files[".csv"])).ReadAll()
	if err != nil || len(rows) != 1+len(res.Cells) || !slices.Equal(rows[0], report.CSVHeader) {
		t.Errorf("csv: %v, %d rows, want the header and one row per cell (%d)", err, len(rows), len(res.Cells))
	}
	for _, sc := range api.Scenarios() {
		if !bytes.Contains(files[".txt"], []byte("== "+string(sc)+" (")) || !bytes.Contains(files[".md"], []byte("## "+string(sc)+" (")) {
			t.Errorf("the table or the markdown has no section for %s", sc)
		}
	}
	for _, v := range res.Verdicts {
		if !bytes.Contains(files[".txt"], []byte(v.Summary)) {
			t.Errorf("the table lacks the verdict %q", v.Summary)
		}
	}
	if !bytes.Contains(files[".txt"], []byte("== summary ==")) || !bytes.Contains(files[".md"], []byte("## Summary")) {
		t.Error("the table or the markdown has no summary")
	}

	// JSON to stdout reads back; stderr (not a terminal) has no progress.
	stdout, stderr, err := execute(t, "run", "--target", addr, "--token", "s3cret", "--scenario", "small",
		"--batch", "2", "--iterations", "1", "--warmup", "0", "--format", "json", "--quiet")
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if _, err := results.Read(strings.NewReader(stdout)); err != nil {
		t.Errorf("stdout is not a result document: %v", err)
	}
	if stderr != "" {
		t.Errorf("--quiet run wrote to stderr: %q", stderr)
	}
}

// --out into folders that do not exist yet: they are made before anything
// is measured, and the results land there; the JSON carries the verdicts.
func TestRunOutMissingFolder(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	prefix := filepath.Join(t.TempDir(), "results", "today", "run1")
	_, stderr, err := execute(t, "run", "--target", addr, "--scenario", "small", "--batch", "2",
		"--iterations", "1", "--warmup", "0", "--format", "json,table", "--out", prefix)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	res, err := results.ReadFile(prefix + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Verdicts) != 1 || res.Verdicts[0].Summary == "" {
		t.Errorf("verdicts %+v, want one with a summary", res.Verdicts)
	}
	if !strings.Contains(stderr, "meteorbench: summary\n  "+res.Verdicts[0].Summary) {
		t.Errorf("stderr does not end with the summary:\n%s", stderr)
	}
}

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// meteorbenchBinary builds the command once, for tests of the own-server
// mode (which re-executes its own binary as `serve`).
func meteorbenchBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds meteorbench and runs it as a child process, which the race detector does not watch; runs in the normal step")
	}
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "meteorbench-run-test")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "meteorbench")
		out, err := exec.Command("go", "build", "-o", binaryPath, ".").CombinedOutput()
		if err != nil {
			binaryErr = errors.New(string(out))
		}
	})
	if binaryErr != nil {
		t.Fatalf("go build: %v", binaryErr)
	}
	return binaryPath
}

// Without --target, run starts its own server child, measures every protocol
// (the default), and stops it.
func TestRunOwnServer(t *testing.T) {
	bin := meteorbenchBinary(t)
	cmd := exec.Command(bin, "run", "--scenario", "small,stream", "--batch", "5", "--iterations", "2", "--warmup", "0", "--format", "json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := runBounded(t, cmd); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	res, err := results.Read(&stdout)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Env.OwnServer || res.Env.ProtobufVersion == "" || len(res.Cells) != 6 {
		t.Fatalf("own server %v, protobuf %q, %d cells", res.Env.OwnServer, res.Env.ProtobufVersion, len(res.Cells))
	}
	for _, c := range res.Cells {
		if c.Calls != 10 || c.ServerCPUUSPerCall == nil {
			t.Errorf("%s: %d calls, server CPU %v", c.Key(), c.Calls, c.ServerCPUUSPerCall)
		}
	}
	assertGone(t, res.Env.Target)
}

// Ctrl-C: partial results on stdout, exit status 130, the child stopped.
func TestRunOwnServerInterrupted(t *testing.T) {
	bin := meteorbenchBinary(t)
	cmd := exec.Command(bin, "run", "--scenario", "small", "--duration", "1m", "--warmup", "0", "--format", "json")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	errLines := bufio.NewReader(stderr)
	line, _ := errLines.ReadString('\n') // "meteorbench: started own server (meteorbench serve) on ADDR"
	fields := strings.Fields(line)
	if len(fields) == 0 {
		t.Fatalf("no start-up note on stderr")
	}
	addr := fields[len(fields)-1]
	// Interrupt once the server has answered calls: mid-cell, past the
	// contract probe's one call per scenario and protocol.
	for i := 0; ; i++ {
		if counted(addr) > 50 {
			break
		}
		if i > 500 {
			t.Fatal("the run made no calls")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	go io.Copy(io.Discard, errLines)
	err = waitBounded(t, cmd)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want status 130", err)
	}
	res, err := results.Read(&stdout)
	if err != nil {
		t.Fatalf("no partial result on stdout: %v", err)
	}
	if !res.Interrupted || res.Stop.Reason != results.StopInterrupted || len(res.Cells) == 0 || res.Cells[0].Calls == 0 {
		t.Errorf("interrupted %v, stop reason %q, %d cells", res.Interrupted, res.Stop, len(res.Cells))
	}
	assertGone(t, addr)
}

// counted is the number of data calls the server at addr has counted.
func counted(addr string) int {
	s, err := session.Scrape(addr)
	if err != nil {
		return 0
	}
	n := 0.0
	for _, v := range s.Requests {
		n += v
	}
	return int(n)
}

// assertGone checks nothing listens at addr any more: the child was stopped.
func assertGone(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		t.Errorf("the own server at %s is still running after run exited", addr)
	}
}

// --server-cpus pins the own server and the load generator apart: visible
// in /proc/<pid>/status of both processes while the run is on, recorded in
// the result and in every cell's condition.
func TestRunServerCPUs(t *testing.T) {
	avail, err := cpuset.Available()
	if err != nil || avail.Len() < 2 {
		t.Skipf("needs Linux and 2 CPUs (have %v, %v)", avail, err)
	}
	server, client, err := cpuset.Split(avail, 1)
	if err != nil {
		t.Fatal(err)
	}
	bin := meteorbenchBinary(t)
	cmd := exec.Command(bin, "run", "--server-cpus", "1", "--scenario", "small", "--proto", "rest",
		"--batch", "5", "--duration", "3s", "--repeat", "1", "--warmup", "0", "--format", "json", "--quiet")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// While the cell runs: the child serve process and run itself.
	var childCPUs, runCPUs string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && childCPUs == ""; time.Sleep(50 * time.Millisecond) {
		runCPUs = testproc.CPUsAllowed(t, testproc.Status(cmd.Process.Pid))
		if pid := testproc.ChildOf(cmd.Process.Pid, "serve"); pid > 0 && runCPUs == client.String() {
			childCPUs = testproc.CPUsAllowed(t, testproc.Status(pid))
		}
	}
	if err := waitBounded(t, cmd); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if childCPUs != server.String() || runCPUs != client.String() {
		t.Errorf("server on CPUs %q, load generator on %q; want %s and %s", childCPUs, runCPUs, server, client)
	}
	res, err := results.Read(&stdout)
	if err != nil {
		t.Fatal(err)
	}
	if res.Env.ServerCPUs != server.String() || res.Env.ClientCPUs != client.String() || res.Env.GOMAXPROCS != client.Len() {
		t.Errorf("env: server %q, client %q, GOMAXPROCS %d", res.Env.ServerCPUs, res.Env.ClientCPUs, res.Env.GOMAXPROCS)
	}
	for _, c := range res.Cells {
		if c.ServerCPUs != 1 || !strings.Contains(c.Key(), "/s1") {
			t.Errorf("%s: condition %+v", c.Key(), c.Condition)
		}
	}
	// With --target there is no own server to pin: a usage error.
	_, _, err = execute(t, "run", "--target", "127.0.0.1:1", "--server-cpus", "1")
	if exitCodeQuiet(err) != 2 {
		t.Errorf("--target with --server-cpus: %v, want a usage error", err)
	}
	_, _, err = execute(t, "run", "--server-cpus", strconv.Itoa(avail.Len()))
	if exitCodeQuiet(err) != 2 || !strings.Contains(err.Error(), "leaves the load generator no CPU") {
		t.Errorf("--server-cpus %d: %v", avail.Len(), err)
	}
}

// runBounded runs cmd, killing it if it hangs.
func runBounded(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		return err
	}
	return waitBounded(t, cmd)
}

func waitBounded(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	return waitWithin(t, cmd, 60*time.Second)
}

// waitWithin waits for cmd, killing it and failing t after bound.
func waitWithin(t *testing.T, cmd *exec.Cmd, bound time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(bound):
		cmd.Process.Signal(syscall.SIGKILL)
		t.Fatalf("run hung (over %v)", bound)
		return nil
	}
}

// Bad --records values fail at flag time, like every other bad flag.
func TestRunBadRecordsFlags(t *testing.T) {
	for _, v := range []string{"0", "-5", "100001", "abc", "10,10", "1,x", ""} {
		t.Run(v, func(t *testing.T) {
			wantUsageError(t, "run", "--target", "127.0.0.1:1", "--records", v)
		})
	}
}

// `run --records` against the real server: exactly the sizes asked for,
// the bytes per call growing with them, and a crossover per scenario.
func TestRunRecordsCommand(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	stdout, stderr, err := execute(t, "run", "--target", addr, "--scenario", "small,large,post", "--proto", "rest,grpc",
		"--records", "1,10,2500", "--batch", "2", "--iterations", "2", "--warmup", "0", "--format", "json", "--quiet")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	res, err := results.Read(strings.NewReader(stdout))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 2*(1+2*3) {
		t.Fatalf("%d cells, want 14", len(res.Cells))
	}
	last := map[string]float64{}
	for _, c := range res.Cells {
		if c.Calls != 4 || c.Errors != 0 {
			t.Errorf("%s: %d calls, %d errors %v", c.Key(), c.Calls, c.Errors, c.ErrorExamples)
		}
		if c.Scenario == api.Small {
			if c.Records != 0 {
				t.Errorf("%s: small with records %d", c.Key(), c.Records)
			}
			continue
		}
		if !slices.Contains([]int{1, 10, 2500}, c.Records) {
			t.Errorf("%s: records %d", c.Key(), c.Records)
		}
		b := c.BytesPerCall.Received
		if c.Scenario == api.Post {
			b = c.BytesPerCall.Sent
		}
		k := string(c.Scenario) + "/" + string(c.Protocol)
		if b <= last[k] {
			t.Errorf("%s: %.0f bytes per call, not more than the smaller payload's %.0f", c.Key(), b, last[k])
		}
		last[k] = b
	}
	if len(res.Crossovers) != 4 { // large and post, p50 and calls/s, gRPC
		t.Fatalf("crossovers %+v, want 4", res.Crossovers)
	}
	for _, x := range res.Crossovers {
		if x.Protocol != api.GRPC || !slices.Equal(x.Sizes, []int{1, 10, 2500}) || x.Text == "" || x.Condition.Records != 0 {
			t.Errorf("crossover %+v", x)
		}
	}
}
