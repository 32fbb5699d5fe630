package session_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/cpubreakdown"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/target"
	"github.com/meteorbench/meteorbench/internal/testproc"
	"github.com/meteorbench/meteorbench/internal/timing"
)

// checkAddsUp fails a breakdown whose shares do not add up to 1 or whose
// categories' CPU per call do not add up to the counters' (the
// profile's own where the counters are unknown).
func checkAddsUp(t *testing.T, what string, b *results.CPUBreakdown) {
	t.Helper()
	if !b.Known() {
		t.Fatalf("%s: no breakdown: %+v", what, b)
	}
	if b.CPUUSPerCall == nil || b.Coverage == nil {
		t.Fatalf("%s: no counters' CPU per call or no coverage beside the profile's: %+v", what, b)
	}
	var share, us float64
	for _, s := range b.Categories {
		share += s.Share
		us += s.USPerCall
	}
	if math.Abs(share-1) > 1e-9 || math.Abs(us-*b.CPUUSPerCall) > 1e-6**b.CPUUSPerCall {
		t.Errorf("%s: shares add up to %v, µs per call to %v (the counters': %v)", what, share, us, *b.CPUUSPerCall)
	}
	t.Logf("%s: %d samples, profiled %.0f µs/call, counters %.0f µs/call (coverage %.2f): %s", what, b.Samples, b.ProfiledUSPerCall, *b.CPUUSPerCall, *b.Coverage, cpubreakdown.Summary(b, 0))
}

// coverageMisses is b's coverage outside what a profile of its samples
// can meet: MinCoverage less twice the sampling error (±1/√samples) to
// 1 plus twice the sampling error. Go's profiler saw 79-92% of the
// counters' CPU at load average 15 (docs/why.md).
func coverageMisses(what string, b *results.CPUBreakdown) []string {
	if !b.Known() || b.Coverage == nil {
		return nil // checkAddsUp's to fail
	}
	e := 2 / math.Sqrt(float64(b.Samples))
	if lo, hi := session.MinCoverage-e, 1+e; *b.Coverage < lo || *b.Coverage > hi {
		return []string{fmt.Sprintf("%s: the profile saw %.2f of the counters' CPU (%d samples), want %.2f to %.2f", what, *b.Coverage, b.Samples, lo, hi)}
	}
	return nil
}

// pprofChildEnv makes this test binary the server of TestRunProfile: a
// process of its own, since a process has one CPU profiler.
const pprofChildEnv = "METEORBENCH_TEST_PPROF_SERVER"

// TestProfileServerHelper is that server: it serves with Pprof on
// loopback, prints its address and stops when its standard input closes.
func TestProfileServerHelper(t *testing.T) {
	testproc.ChildEnv(t, pprofChildEnv, "TestRunProfile")
	srv, err := server.New(server.Config{Pprof: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(ln.Addr())
	ctx, cancel := context.WithCancel(context.Background())
	go func() { io.Copy(io.Discard, os.Stdin); cancel() }()
	srv.Serve(ctx, ln)
}

// pprofServer starts TestProfileServerHelper and returns its address.
func pprofServer(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := testproc.Child(ctx, "TestProfileServerHelper", pprofChildEnv+"=1")
	stdin, stdout := testproc.StartPiped(t, cmd)
	t.Cleanup(func() { stdin.Close(); cmd.Wait(); cancel() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the server process said no address: %v", err)
	}
	return strings.TrimSpace(line)
}

// TestRunProfile: a profiled run against a server with --pprof (another
// process) gives every cell both breakdowns, saves their profiles,
// alternates profiled windows with others and says what profiling cost.
func TestRunProfile(t *testing.T) {
	addr := pprofServer(t)
	dir := t.TempDir()
	cfg := quick(addr)
	cfg.Scenarios, cfg.Protocols = []api.Scenario{api.Large}, []api.Protocol{api.REST, api.GRPC}
	cfg.Iterations, cfg.Duration, cfg.Repeat = 0, 400*time.Millisecond, 2
	cfg.Profile, cfg.ProfileDir = true, dir
	res := run(t, cfg)
	for _, p := range cfg.Protocols {
		c := cellOf(t, res, api.Large, p)
		checkAddsUp(t, string(p)+" server", c.ServerCPUBreakdown)
		checkAddsUp(t, string(p)+" client", c.ClientCPUBreakdown)
		if c.ServerCPUBreakdown.Windows != 1 {
			t.Errorf("%s: %d windows profiled of 2, want 1 (every other one)", p, c.ServerCPUBreakdown.Windows)
		}
		if c.ServerCPUBreakdown.Categories[string(cpubreakdown.Encode)].Samples == 0 {
			t.Errorf("%s: the server's large answers cost no encoding", p)
		}
		for _, f := range []string{c.ServerCPUBreakdown.File, c.ClientCPUBreakdown.File} {
			b, err := os.ReadFile(f)
			if err != nil || filepath.Dir(f) != dir {
				t.Fatalf("profile %q not saved in %s: %v", f, dir, err)
			}
			if _, err := cpubreakdown.Parse(b); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
	if pc := res.ProfilingCost; pc == nil || pc.Cells != 2 || pc.ServerCPUPerCall == nil {
		t.Errorf("profiling cost: %+v, want it over 2 cells", pc)
	}
}

// TestMeasureProfile: a capacity or fit probe (Session.Measure) is
// profiled too, every probe.
func TestMeasureProfile(t *testing.T) {
	addr := pprofServer(t)
	cfg := quick(addr)
	cfg.Scenarios, cfg.Protocols = []api.Scenario{api.Large}, []api.Protocol{api.GRPC}
	// 1 s: enough samples (about 50 of the server's) to judge coverage.
	cfg.Iterations, cfg.Duration = 0, time.Second
	cfg.Profile = true
	s, err := session.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := results.CellKey{Scenario: api.Large, Protocol: api.GRPC, Batch: 3}
	k.Concurrency = 1
	// How much of the counters' CPU the profiles saw depends on the
	// machine's load (timing).
	timing.Retry(t, 0, func(attempt int) []string {
		c, err := s.Measure(context.Background(), k, cfg.WithDefaults().Bounds())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("attempt %d, load average %.1f", attempt, timing.LoadAverage())
		checkAddsUp(t, "probe server", c.ServerCPUBreakdown)
		checkAddsUp(t, "probe client", c.ClientCPUBreakdown)
		if !slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.Contains(w, "CPU breakdown from") }) && c.ServerCPUBreakdown.Samples < session.FewSamples {
			t.Errorf("a breakdown of %d samples without a warning: %q", c.ServerCPUBreakdown.Samples, c.Warnings)
		}
		return append(coverageMisses("probe server", c.ServerCPUBreakdown), coverageMisses("probe client", c.ClientCPUBreakdown)...)
	})
}

// TestRunProfileNoPprof: a target without /debug/pprof/ leaves the
// server's side unknown with why; the load generator's is still profiled.
func TestRunProfileNoPprof(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	cfg := quick(addr)
	cfg.Scenarios, cfg.Protocols = []api.Scenario{api.Large}, []api.Protocol{api.REST}
	cfg.Iterations, cfg.Duration = 0, 300*time.Millisecond
	cfg.Profile = true
	res := run(t, cfg)
	c := cellOf(t, res, api.Large, api.REST)
	if b := c.ServerCPUBreakdown; b == nil || !strings.Contains(b.Unknown, "serves no /debug/pprof/") {
		t.Errorf("server breakdown of a target without pprof: %+v, want unknown with why", b)
	}
	checkAddsUp(t, "client", c.ClientCPUBreakdown)
}

// TestRunProfileServerPprofUnreachable: a --server-pprof that does not
// answer fails before anything is measured, as ErrServerPprof.
func TestRunProfileServerPprofUnreachable(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	cfg := quick(addr)
	cfg.Profile, cfg.ServerPprof = true, target.One("http://"+dead+"/debug/pprof/profile")
	before := serverCounts(t, addr)
	res, err := session.Run(context.Background(), cfg)
	if !errors.Is(err, session.ErrServerPprof) || res != nil {
		t.Fatalf("Run with an unreachable --server-pprof: %v (result %v), want ErrServerPprof and none", err, res != nil)
	}
	after := serverCounts(t, addr)
	for k, v := range after {
		if strings.Contains(k, api.MethodGetLargePayloadAsList) && v != before[k] {
			t.Errorf("%s: %v calls made before the refusal", k, v-before[k])
		}
	}
}

// TestParseServerPprof: --server-pprof takes one URL (a query's "=" does
// not make it per protocol) or one per protocol, as --target does.
func TestParseServerPprof(t *testing.T) {
	for _, c := range []struct {
		in, want, err string
	}{
		{in: "http://127.0.0.1:6060", want: "http://127.0.0.1:6060/debug/pprof/profile"},
		{in: "http://127.0.0.1:6060/debug/pprof/profile?seconds=30", want: "http://127.0.0.1:6060/debug/pprof/profile"},
		{in: "rest=http://a:1/debug/pprof/,grpc=http://b:2", want: "rest=http://a:1/debug/pprof/profile,grpc=http://b:2/debug/pprof/profile"},
		{in: "grpc=http://b:2/", want: "grpc=http://b:2/debug/pprof/profile"},
		{in: "rest=ftp://a", err: "want an http:// or https:// URL"},
		{in: "soap=http://a:1", err: "unknown key"},
		{in: "127.0.0.1:6060", err: "want an http:// or https:// URL"},
	} {
		got, err := session.ParseServerPprof(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseServerPprof(%q) = %v, %v; want an error with %q", c.in, got, err, c.err)
		case c.err == "" && (err != nil || got.String() != c.want):
			t.Errorf("ParseServerPprof(%q) = %v, %v; want %s", c.in, got, err, c.want)
		}
	}
}

// TestRunProfileServerPprofPerProtocol: with --server-pprof for REST
// only, REST's cells get the server's breakdown and gRPC's say why not.
func TestRunProfileServerPprofPerProtocol(t *testing.T) {
	addr := pprofServer(t)
	cfg := quick(addr)
	cfg.Scenarios, cfg.Protocols = []api.Scenario{api.Large}, []api.Protocol{api.REST, api.GRPC}
	cfg.Iterations, cfg.Duration = 0, 300*time.Millisecond
	cfg.Profile = true
	var err error
	if cfg.ServerPprof, err = session.ParseServerPprof("rest=http://" + addr); err != nil {
		t.Fatal(err)
	}
	res := run(t, cfg)
	if b := cellOf(t, res, api.Large, api.REST).ServerCPUBreakdown; !b.Known() || !strings.HasPrefix(b.Source, "http://"+addr) {
		t.Errorf("REST's server breakdown: %+v, want one from http://%s", b, addr)
	}
	if b := cellOf(t, res, api.Large, api.GRPC).ServerCPUBreakdown; b == nil || !strings.Contains(b.Unknown, "no URL for grpc") {
		t.Errorf("gRPC's server breakdown: %+v, want unknown: no URL for grpc", b)
	}
}
