package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/loadgen/summary"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/tcptest"
)

// debianPython is the python3 with Debian's python3-grpcio and
// python3-protobuf (another python3 may be first on PATH without them).
const debianPython = "/usr/bin/python3"

// pair is testdata/pair_server.py running: REST on one port, gRPC on
// another, written apart from meteorbench (http.server and grpcio's C-core
// HTTP/2).
type pair struct{ rest, grpc string }

func (p pair) target() string { return "rest=" + p.rest + ",grpc=" + p.grpc }

// startPair starts testdata/pair_server.py with a FileDescriptorSet of
// api/meteor.proto written from the generated package (no protoc), and
// returns its two addresses. Skipped, with the reason, where Debian's
// python3 lacks grpcio or protobuf.
func startPair(t *testing.T) pair {
	t.Helper()
	if out, err := exec.Command(debianPython, "-c", "import grpc, google.protobuf").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import grpc and google.protobuf (install python3-grpcio python3-protobuf; .ci/run does): %v %s", debianPython, err, strings.TrimSpace(string(out)))
	}
	fds := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{
		protodesc.ToFileDescriptorProto(timestamppb.File_google_protobuf_timestamp_proto),
		protodesc.ToFileDescriptorProto(pb.File_meteor_proto),
	}}
	b, err := proto.Marshal(fds)
	if err != nil {
		t.Fatal(err)
	}
	desc := filepath.Join(t.TempDir(), "meteor.pb")
	if err := os.WriteFile(desc, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(debianPython, "testdata/pair_server.py", desc, "../../internal/data/meteorites.json")
	cmd.Stderr = os.Stderr
	s := startScript(t, 30*time.Second, cmd) // contract_test.go
	v, ok := strings.CutPrefix(s, "listening rest=")
	restAddr, grpcAddr, ok2 := strings.Cut(v, ",grpc=")
	if !ok || !ok2 {
		t.Fatalf("pair_server.py printed %q", s)
	}
	return pair{rest: restAddr, grpc: grpcAddr}
}

// runJSON runs `run` in-process with args and returns its document; a
// cell judged suspect (timing on a busy machine) is logged, not a failure.
func runJSON(t *testing.T, args ...string) *results.Result {
	t.Helper()
	res, suspect := runJSONOrSuspect(t, args...)
	if suspect != "" {
		// A plumbing test's figures are read all the same: CI's normal
		// step runs three packages at once.
		t.Logf("run %q judged a cell suspect on this busy machine (its results written): %s", args, suspect)
	}
	return res
}

// runJSONOrSuspect is runJSON for a timing test: a run that failed only
// because a cell could not be trusted (its document written) gives that
// document and the error, which the test counts as a timing miss; any
// other failure ends the test.
func runJSONOrSuspect(t *testing.T, args ...string) (*results.Result, string) {
	t.Helper()
	stdout, stderr, err := execute(t, append([]string{"run", "--format", "json", "--quiet"}, args...)...)
	var suspect string
	if err != nil {
		if !isSuspect(err) {
			t.Fatalf("run %q: %v\n%s", args, err, stderr)
		}
		suspect = err.Error()
	}
	var res results.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("run's JSON: %v", err)
	}
	return &res, suspect
}

// The original experiment's layout: REST and gRPC servers on two ports, the
// gRPC one a non-Go HTTP/2 stack. check says what each address serves; one
// run measures all four scenarios over both protocols with both engines,
// without an error, each cell naming its address, with verdicts.
func TestPairOnTwoPorts(t *testing.T) {
	p := startPair(t)

	stdout, _, err := execute(t, "check", "--target", p.target())
	if err != nil {
		t.Fatalf("check: %v\n%s", err, stdout)
	}
	wantIn(t, "check's table", stdout,
		"target "+p.target()+"\n",
		"  grpc           "+p.grpc+"\n",
		"serves 8 of 12: small rest, small grpc, large rest, large grpc, stream rest, stream grpc, post rest, post grpc\n",
		"not served (run marks them, measures the rest): small rest-protobuf, large rest-protobuf, stream rest-protobuf, post rest-protobuf\n",
		"lacks (optional): metrics at "+p.rest+", metrics at "+p.grpc+", health at "+p.grpc+"\n",
		session.NoGRPCHealth)

	// Asked for everything: the web protocols have no address in this
	// form (run's reason, naming the key to add), REST over HTTP/2 is not
	// served by http.server;
	// gRPC is served once, exit 0.
	stdout, _, err = execute(t, "check", "--target", p.target(), "--proto", "all", "--http-version", "1.1,2")
	if err != nil {
		t.Fatalf("check --proto all --http-version 1.1,2: %v\n%s", err, stdout)
	}
	wantIn(t, "check's table", stdout,
		"serves 8 of 36: small rest, small grpc, large rest, large grpc, stream rest, stream grpc, post rest, post grpc\n",
		"small rest over HTTP/2, small rest-protobuf over HTTP/2, small grpc-web over HTTP/2, small connect over HTTP/2,",
		"GET /api/MeteoriteLandings HTTP/2 (Accept: application/json)")
	web := 0
	for _, line := range strings.Split(stdout, "\n") {
		if strings.Contains(line, " HTTP/2 ") && !strings.Contains(line, "  NO: ") {
			t.Errorf("served over HTTP/2 by http.server: %s", line)
		}
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], "rest") && strings.Contains(line, " HTTP/2 ") && !strings.HasSuffix(line, " ("+p.rest+" speaks HTTP/1.1 only)") {
			t.Errorf("REST over HTTP/2 at http.server, without the cause: %s", line)
		}
		if f := strings.Fields(line); len(f) > 1 && (f[1] == string(api.GRPCWeb) || f[1] == string(api.Connect)) {
			web++
			if !strings.HasSuffix(line, "  NO: the per-protocol --target gives it no address (add "+f[1]+"=HOST:PORT, or give one port for every protocol: --target HOST:PORT)") {
				t.Errorf("a web protocol against the per-protocol --target: %s", line)
			}
		}
	}
	if web != 16 {
		t.Errorf("%d calls of grpc-web and connect, want 16", web)
	}

	res := runJSON(t, "--target", p.target(), "--proto", "rest,grpc", "--engine", "standard,lean",
		"--duration", "300ms", "--warmup", "100ms", "--repeat", "1")
	if res.Env.Target != p.target() || res.Env.Targets["rest"] != p.rest || res.Env.Targets["grpc"] != p.grpc {
		t.Errorf("env target %q, targets %v", res.Env.Target, res.Env.Targets)
	}
	type key struct {
		sc     api.Scenario
		p      api.Protocol
		engine string
	}
	seen := map[key]bool{}
	for _, c := range res.Cells {
		seen[key{c.Scenario, c.Protocol, c.Engine}] = true
		want := p.rest
		if c.Protocol == api.GRPC {
			want = p.grpc
		}
		if c.Errors != 0 || c.Calls == 0 || c.Target != want {
			t.Errorf("%s %s %s: %d calls, %d errors %v, target %q (want %q)", c.Scenario, c.Protocol, c.Engine, c.Calls, c.Errors, c.ErrorClasses, c.Target, want)
		}
		if c.ServerCPUUSPerCall != nil {
			t.Errorf("%s %s: server CPU %v from a server without /metrics or --server-pid", c.Scenario, c.Protocol, *c.ServerCPUUSPerCall)
		}
	}
	for _, sc := range api.Scenarios() {
		for _, proto := range []api.Protocol{api.REST, api.GRPC} {
			for _, engine := range []string{"", "lean"} {
				if !seen[key{sc, proto, engine}] {
					t.Errorf("no cell %s %s engine %q (cells %v)", sc, proto, engine, seen)
				}
			}
		}
	}
	if len(res.Verdicts) < 8 {
		t.Errorf("%d verdicts, want one per scenario and engine: %+v", len(res.Verdicts), res.Verdicts)
	}
	for _, v := range res.Verdicts { // the verdict names where each side's calls went
		if at := "REST at " + p.rest + ", gRPC at " + p.grpc; !strings.Contains(v.Summary, at) {
			t.Errorf("verdict %q does not name the addresses (%q)", v.Summary, at)
		}
	}
	wantWarning(t, res, "target "+p.grpc+": "+session.NoGRPCHealth)
	wantWarning(t, res, "server CPU per call not reported for grpc: "+p.grpc+" is gRPC only")
}

// wantWarning checks that the run warned with a line holding want.
func wantWarning(t *testing.T, res *results.Result, want string) {
	t.Helper()
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
		t.Errorf("no warning %q in %q", want, res.Warnings)
	}
}

// The pair's gRPC half alone (--target grpc=...): gRPC only, asked nothing
// over HTTP/1.1; given as the single form or under the wrong key, the
// address is named for the HTTP version it speaks, exit 2.
func TestPairGRPCHalfAlone(t *testing.T) {
	p := startPair(t)
	res := runJSON(t, "--target", "grpc="+p.grpc, "--duration", "200ms", "--warmup", "50ms", "--repeat", "1")
	if len(res.Cells) != len(api.Scenarios()) {
		t.Fatalf("%d cells, want one per scenario over grpc", len(res.Cells))
	}
	for _, c := range res.Cells {
		if c.Protocol != api.GRPC || c.Errors != 0 || c.Calls == 0 || c.Target != p.grpc {
			t.Errorf("%s %s: %d calls, %d errors, target %q", c.Scenario, c.Protocol, c.Calls, c.Errors, c.Target)
		}
	}
	wantWarning(t, res, session.NoGRPCHealth)

	for _, c := range []struct{ target, want string }{
		{p.grpc, p.grpc + " speaks HTTP/2 only: give it as --target grpc=" + p.grpc},
		{"grpc=" + p.rest, p.rest + " speaks HTTP/1.1 only: give it as --target rest=" + p.rest},
	} {
		for _, cmd := range []string{"run", "check"} {
			_, _, err := execute(t, cmd, "--target", c.target, "--duration", "100ms")
			if cmd == "check" {
				_, _, err = execute(t, cmd, "--target", c.target)
			}
			if code := exitCodeQuiet(err); code != 2 || err.Error() != c.want {
				t.Errorf("%s --target %s: exit %d, %v; want 2, %q", cmd, c.target, code, err, c.want)
			}
		}
	}
}

// --target's and --server-pid's bad forms: one line naming the flag, exit 2,
// nothing measured.
func TestTargetBadForms(t *testing.T) {
	wantUsageErrors(t, []string{"run"}, [][]string{
		{"--target", "rest=127.0.0.1:1,soap=127.0.0.1:2"},
		{"--target", "rest=127.0.0.1:1,rest=127.0.0.1:2"},
		{"--target", "rest="},
		{"--target", "grpc=nohost"},
		{"--target", "rest=127.0.0.1:1", "--proto", "grpc"},
		{"--target", "127.0.0.1:1", "--server-pid", "0"},
		{"--target", "127.0.0.1:1", "--server-pid", "rest=1,web=2"},
		{"--server-pid", "1"},
	})
	// A process that does not exist: the first free pid above ours is
	// not guaranteed free, so take one past pid_max.
	_, _, err := execute(t, "run", "--target", "127.0.0.1:1", "--server-pid", "2147483647")
	if code := exitCodeQuiet(err); code != 2 || !strings.Contains(err.Error(), "--server-pid 2147483647: no such process") {
		t.Errorf("a --server-pid of no process: exit %d, %v", code, err)
	}
	for _, args := range [][]string{{"--target", "rest=127.0.0.1:1,x=y"}, {"--target", "grpc=127.0.0.1:1,grpc=127.0.0.1:2"}} {
		_, _, err := execute(t, append([]string{"check"}, args...)...)
		if code := exitCodeQuiet(err); code != 2 || !strings.Contains(err.Error(), `"--target"`) {
			t.Errorf("check %q: exit %d, %v", args, code, err)
		}
	}
}

// --server-pid against meteorbench's own server, run as a process of its
// own: the cell's server CPU per call from /proc (10 ms ticks) agrees with
// the same window's /metrics figure (getrusage, microseconds) within 10%.
// Timing-dependent (the two are read a few hundred microseconds apart, and
// the ticks round): up to three attempts, each logged.
func TestServerPIDAgreesWithMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts meteorbench serve as a child process; runs in the normal step")
	}
	cmd, br := startServeChild(t, nil, "serve", "--addr", "127.0.0.1:0")
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := br.ReadString('\n')
	m := startLine.FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("serve's first line %q (%v)", line, err)
	}
	addr, pid := m[1], strconv.Itoa(cmd.Process.Pid)
	go func() { // drain serve's log
		for {
			if _, err := br.ReadString('\n'); err != nil {
				return
			}
		}
	}()
	// Your own endpoints' server read the same way: the source says so.
	ep := runJSON(t, "--rest-url", "http://"+addr+"/api/MeteoriteLandings", "--grpc-addr", addr,
		"--grpc-method", "MeteoriteLandingsService.MeteoriteLandingsService/GetVersion", "--schema", "../../api/meteor.proto",
		"--server-pid", pid, "--duration", "300ms", "--warmup", "100ms", "--repeat", "1")
	if len(ep.Cells) != 2 {
		t.Fatalf("endpoints with --server-pid: %d cells, want 2", len(ep.Cells))
	}
	for _, c := range ep.Cells {
		if c.ServerCPUSource != summary.SourceProc || c.ServerCPUUSPerCall == nil {
			t.Errorf("endpoint %s: server CPU source %q, per call %v: want %q with a figure", c.Protocol, c.ServerCPUSource, c.ServerCPUUSPerCall, summary.SourceProc)
		}
	}
	var misses []string
	for attempt := 1; attempt <= 3; attempt++ {
		res, suspect := runJSONOrSuspect(t, "--target", addr, "--server-pid", pid, "--scenario", "large", "--proto", "grpc,rest",
			"--concurrency", "2", "--duration", "1500ms", "--warmup", "200ms", "--repeat", "1")
		if res.Env.ServerPID != pid {
			t.Fatalf("env server_pid %q, want %s", res.Env.ServerPID, pid)
		}
		var miss []string
		if suspect != "" { // a busy machine: the figures below are still read
			miss = append(miss, suspect)
		}
		for _, c := range res.Cells {
			if c.ServerCPUSource != summary.SourceProc || c.ServerCPUUSPerCall == nil || c.ServerCPUMetricsUSPerCall == nil {
				t.Fatalf("%s %s: source %q, proc %v, metrics %v", c.Scenario, c.Protocol, c.ServerCPUSource, c.ServerCPUUSPerCall, c.ServerCPUMetricsUSPerCall)
			}
			proc, metrics := *c.ServerCPUUSPerCall, *c.ServerCPUMetricsUSPerCall
			ratio := proc / metrics
			t.Logf("attempt %d, %s %s: %d calls, server CPU/call /proc %.1f µs, /metrics %.1f µs, ratio %.3f", attempt, c.Scenario, c.Protocol, c.Calls, proc, metrics, ratio)
			if math.Abs(ratio-1) > 0.10 {
				miss = append(miss, fmt.Sprintf("%s %s ratio %.3f", c.Scenario, c.Protocol, ratio))
			}
		}
		if len(miss) == 0 {
			return
		}
		misses = append(misses, fmt.Sprintf("attempt %d: %s", attempt, strings.Join(miss, ", ")))
		t.Logf("timing: attempt %d of 3 missed: %s", attempt, strings.Join(miss, ", "))
	}
	t.Errorf("timing: /proc and /metrics server CPU per call differ by more than 10%% in all 3 attempts (each logged above): %s", strings.Join(misses, "; "))
}

// recordingProxy (listening at addr) forwards every connection to a
// server and keeps the first bytes each sent: what the clients spoke.
type recordingProxy struct {
	addr   string
	mu     sync.Mutex
	starts []string
}

func startRecordingProxy(t *testing.T, to string) *recordingProxy {
	t.Helper()
	p := &recordingProxy{}
	p.addr = tcptest.Start(t, func(c net.Conn) { p.serve(c, to) })
	return p
}

// serve forwards c to the address to, keeping what c sent first.
func (p *recordingProxy) serve(c net.Conn, to string) {
	up, err := net.Dial("tcp", to)
	if err != nil {
		return
	}
	defer up.Close()
	first := make([]byte, 16)
	n, _ := io.ReadFull(c, first)
	p.mu.Lock()
	p.starts = append(p.starts, string(first[:n]))
	p.mu.Unlock()
	if _, err := up.Write(first[:n]); err != nil {
		return
	}
	go io.Copy(c, up)
	io.Copy(up, c)
}

// Nothing of a run or a check sends HTTP/1.1 to a gRPC address: every
// connection to --target grpc=... (meteorbench's own server, reached
// through a proxy that records what each connection starts with) opens
// with the HTTP/2 preface, the health check included (grpc.health.v1,
// SERVING: no warning). Go only: runs where Python cannot.
func TestGRPCAddressGetsNoHTTP1(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	proxy := startRecordingProxy(t, addr)
	target := "rest=" + addr + ",grpc=" + proxy.addr
	if stdout, _, err := execute(t, "check", "--target", target); err != nil {
		t.Fatalf("check: %v\n%s", err, stdout)
	} else {
		wantIn(t, "check's table", stdout, "serves 12 of 12")
		if !slices.ContainsFunc(strings.Split(stdout, "\n"), func(l string) bool {
			return strings.Contains(l, proxy.addr+"  grpc.health.v1.Health/Check") && strings.HasSuffix(l, " ok")
		}) {
			t.Errorf("check's table lacks grpc.health.v1 ok at %s:\n%s", proxy.addr, stdout)
		}
	}
	res := runJSON(t, "--target", target, "--proto", "grpc,rest", "--duration", "200ms", "--warmup", "50ms", "--repeat", "1")
	for _, c := range res.Cells {
		// The REST address's /metrics gives REST's server CPU; the gRPC
		// address is never asked over HTTP/1.1, so gRPC has none.
		wantSource := summary.SourceMetrics
		if c.Protocol == api.GRPC {
			wantSource = ""
		}
		if c.Errors != 0 || c.Calls == 0 || (c.ServerCPUUSPerCall != nil) != (wantSource != "") || c.ServerCPUSource != wantSource {
			t.Errorf("%s %s: %d calls, %d errors, server CPU %v from %q", c.Scenario, c.Protocol, c.Calls, c.Errors, c.ServerCPUUSPerCall, c.ServerCPUSource)
		}
	}
	if slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "grpc.health.v1") }) {
		t.Errorf("a warning about grpc.health.v1 from a server that serves it: %q", res.Warnings)
	}
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	if len(proxy.starts) == 0 {
		t.Fatal("no connection reached the gRPC address")
	}
	for _, s := range proxy.starts {
		if !strings.HasPrefix(s, "PRI * HTTP/2.0") {
			t.Errorf("a connection to the gRPC address started %q, not the HTTP/2 preface", s)
		}
	}
	t.Logf("%d connections to the gRPC address, each opened with the HTTP/2 preface", len(proxy.starts))
}

// An address given as the other HTTP version than it speaks is named, exit
// 2, nothing measured: a plain grpc-go server (h2c only) as the one-port
// form, a plain net/http server as grpc=. Go only: runs where Python
// cannot.
func TestTargetWrongHTTPVersion(t *testing.T) {
	g, h := startPlainGRPC(t), startPlainHTTP(t)
	for _, c := range []struct{ target, want string }{
		{g, g + " speaks HTTP/2 only: give it as --target grpc=" + g},
		{"grpc=" + h, h + " speaks HTTP/1.1 only: give it as --target rest=" + h},
	} {
		for _, args := range [][]string{{"run", "--target", c.target, "--duration", "100ms"}, {"check", "--target", c.target}, {"capacity", "--target", c.target}} {
			stdout, _, err := execute(t, args...)
			if code := exitCodeQuiet(err); code != 2 || err.Error() != c.want || stdout != "" {
				t.Errorf("%q: exit %d, %v, stdout %q; want 2, %q", args, code, err, stdout, c.want)
			}
		}
	}
}
