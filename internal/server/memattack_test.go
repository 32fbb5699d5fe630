package server_test

// The server under a real memory limit, attacked by many clients that ask
// for the largest answers and never read them, on both protocols at once,
// while a well-behaved client keeps calling. The server runs as a child
// process (this test binary, re-executed) in a cgroup v1 memory folder of
// its own, with its memory limit left to its default (3/4 of the cgroup's)
// and Go's soft limit set to it, as `serve` does.
//
//	go test -run TestMemoryAttack -v ./internal/server/
//
// METEORBENCH_MEMATTACK="rest=200,grpc=64,cgroup=1GiB,hold=10s" sets the
// attackers for a bigger measurement by hand (docs/server.md).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/testproc"
)

const memChildEnv = "METEORBENCH_MEMATTACK_CHILD"

// TestMemoryAttackChild is the server of TestMemoryAttack when run as its
// child; otherwise it does nothing.
func TestMemoryAttackChild(t *testing.T) {
	if os.Getenv(memChildEnv) == "" {
		return
	}
	limit, _ := server.DefaultMemoryLimit()
	debug.SetMemoryLimit(limit)
	srv, err := server.New(server.Config{})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Printf("ADDR %s LIMIT %d\n", ln.Addr(), limit)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }() // the parent closes stdin to stop it
	_ = srv.Serve(ctx, ln)
	os.Exit(0)
}

// memAttackPlan is the size of an attack.
type memAttackPlan struct {
	rest, grpc int           // attacking connections of each protocol
	streams    int           // zero-window list calls per gRPC connection
	cgroup     int64         // the cgroup's memory limit
	hold       time.Duration // how long the attackers stay
}

func memAttackPlanFromEnv(t *testing.T) memAttackPlan {
	p := memAttackPlan{rest: 48, grpc: 24, streams: 8, cgroup: 256 << 20, hold: 4 * time.Second}
	v := os.Getenv("METEORBENCH_MEMATTACK")
	for kv := range strings.SplitSeq(v, ",") {
		if kv == "" {
			continue
		}
		k, val, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "rest":
			p.rest, err = strconv.Atoi(val)
		case "grpc":
			p.grpc, err = strconv.Atoi(val)
		case "streams":
			p.streams, err = strconv.Atoi(val)
		case "hold":
			p.hold, err = time.ParseDuration(val)
		case "cgroup":
			var mb int
			mb, err = strconv.Atoi(strings.TrimSuffix(val, "MiB"))
			p.cgroup = int64(mb) << 20
		default:
			err = errors.New("unknown key")
		}
		if err != nil {
			t.Fatalf("METEORBENCH_MEMATTACK=%q: %s: %v", v, kv, err)
		}
	}
	return p
}

// memCgroup is a cgroup v1 memory folder of the test's own.
type memCgroup struct{ dir string }

func newMemCgroup(t *testing.T, limit int64) *memCgroup {
	const root = "/sys/fs/cgroup/memory"
	if _, err := os.Stat(filepath.Join(root, "memory.limit_in_bytes")); err != nil {
		t.Skipf("no cgroup v1 memory controller at %s (%v): the memory attack needs one", root, err)
	}
	dir := filepath.Join(root, fmt.Sprintf("meteorbench-memattack-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot create a cgroup (%v): the memory attack needs root and cgroup v1", err)
	}
	g := &memCgroup{dir: dir}
	t.Cleanup(func() {
		for range 50 { // the child may take a moment to leave
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("cgroup %s not removed", dir)
	})
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		t.Fatalf("cgroup limit: %v", err)
	}
	return g
}

func (g *memCgroup) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(g.dir, name))
	return strings.TrimSpace(string(b))
}

// oomKills reads memory.oom_control's oom_kill count (0 if the kernel does
// not report it) and under_oom.
func (g *memCgroup) oomKills() (kills, under string) {
	kills, under = "0", "0"
	for line := range strings.SplitSeq(g.read("memory.oom_control"), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "oom_kill":
			kills = v
		case "under_oom":
			under = v
		}
	}
	return kills, under
}

// rssOf reads a process's resident set size from /proc.
func rssOf(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, true
		}
	}
	return 0, false
}

// startMemChild starts the server child inside g and returns its pid,
// address and memory limit; a t.Cleanup stops it.
func startMemChild(t *testing.T, g *memCgroup) (pid int, addr string, limit int64) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The shell joins the cgroup, then becomes the server: it is inside
	// from its first allocation.
	cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$1/cgroup.procs" && exec "$2" -test.run '^TestMemoryAttackChild$'`,
		"sh", g.dir, exe)
	cmd.Env = append(os.Environ(), memChildEnv+"=1", "GOMAXPROCS=2")
	cmd.Stderr = os.Stderr
	stdin, stdout := testproc.StartPiped(t, cmd)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if _, err2 := fmt.Sscanf(line, "ADDR %s LIMIT %d", &addr, &limit); err != nil || err2 != nil {
		t.Fatalf("child server: %q %v %v", line, err, err2)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return cmd.Process.Pid, addr, limit
}

// TestMemoryAttack: many REST clients of the largest answer (100,000
// records, 22 MB of JSON) that never read, and many gRPC connections with a
// zero flow-control window each asking for the largest list, all at once,
// against a server in a memory cgroup. The server is never killed, its RSS
// stays under its memory limit, a well-behaved client's health and small
// calls all succeed during the attack, and the RSS returns near its idle
// figure within a minute of the attackers leaving.
func TestMemoryAttack(t *testing.T) {
	if raceEnabled {
		t.Skip("skipped under -race: the race detector's shadow memory (several times the heap) is outside Go's memory limit, and this test measures memory")
	}
	plan := memAttackPlanFromEnv(t)
	g := newMemCgroup(t, plan.cgroup)
	pid, addr, limit := startMemChild(t, g)

	// Warm up: build the generated records once (what the attack asks for
	// would build them anyway), then take the idle RSS.
	hc := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: time.Minute}
	resp, err := hc.Get("http://" + addr + api.PathList + "?records=" + strconv.Itoa(api.MaxRecords))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	time.Sleep(500 * time.Millisecond)
	idle, _ := rssOf(pid)

	var peak atomic.Int64
	sampleDone := make(chan struct{})
	stopSampling := make(chan struct{})
	go func() {
		defer close(sampleDone)
		for {
			if r, ok := rssOf(pid); ok && r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	// The well-behaved client: REST /healthz, gRPC health and GetVersion,
	// one after the other, and the latency of each health round.
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	var (
		mu       sync.Mutex
		lats     []time.Duration
		failures []string
	)
	stopCalls := make(chan struct{})
	callsDone := make(chan struct{})
	go func() {
		defer close(callsDone)
		hl := healthpb.NewHealthClient(cc)
		dc := pb.NewMeteoriteLandingsServiceClient(cc)
		for {
			select {
			case <-stopCalls:
				return
			case <-time.After(20 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			t0 := time.Now()
			var errs []error
			if r, err := hc.Get("http://" + addr + api.PathHealth); err != nil {
				errs = append(errs, err)
			} else {
				_, _ = io.Copy(io.Discard, r.Body)
				r.Body.Close()
				if r.StatusCode != http.StatusOK {
					errs = append(errs, fmt.Errorf("/healthz: %s", r.Status))
				}
			}
			if _, err := hl.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
				errs = append(errs, err)
			}
			if _, err := dc.GetVersion(ctx, &pb.EmptyRequest{}); err != nil {
				errs = append(errs, err)
			}
			cancel()
			mu.Lock()
			lats = append(lats, time.Since(t0))
			if err := errors.Join(errs...); err != nil {
				failures = append(failures, err.Error())
			}
			mu.Unlock()
		}
	}()

	// The attackers.
	var conns []net.Conn
	for range plan.rest {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatalf("REST attacker: %v", err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "GET %s?records=%d HTTP/1.1\r\nHost: x\r\n\r\n", api.PathList, api.MaxRecords)
	}
	var stops []func() *h2Seen
	for range plan.grpc {
		c := h2Dial(t, addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
		conns = append(conns, c.conn)
		stops = append(stops, c.readInBackground())
		for range plan.streams {
			if _, err := c.call(pb.MeteoriteLandingsService_GetLargePayloadAsList_FullMethodName,
				api.MetadataRecords, strconv.Itoa(api.MaxRecords)); err != nil {
				t.Fatalf("gRPC attacker: %v", err)
			}
		}
		if err := c.flush(); err != nil {
			t.Fatalf("gRPC attacker: %v", err)
		}
	}
	// A large call of the well-behaved client while the attack holds the
	// budget: served, or refused with the budget's message.
	time.Sleep(plan.hold / 2)
	lctx := metadata.AppendToOutgoingContext(context.Background(), api.MetadataRecords, "1000")
	lctx, lcancel := context.WithTimeout(lctx, 10*time.Second)
	_, largeErr := pb.NewMeteoriteLandingsServiceClient(cc).GetLargePayloadAsList(lctx, &pb.EmptyRequest{})
	lcancel()
	time.Sleep(plan.hold / 2)
	attackPeak := peak.Load()
	used := scrapeBudget(t, hc, addr)
	for _, c := range conns {
		c.Close()
	}
	for _, stop := range stops {
		stop()
	}
	close(stopCalls)
	<-callsDone

	// Back to idle: poll for a minute at most.
	settle := time.Now()
	target := idle + max(idle/4, 24<<20)
	var after int64
	for {
		after, _ = rssOf(pid)
		if after <= target || time.Since(settle) > time.Minute {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	settled := time.Since(settle)
	close(stopSampling)
	<-sampleDone

	kills, under := g.oomKills()
	slices.Sort(lats)
	q := func(p float64) time.Duration {
		if len(lats) == 0 {
			return 0
		}
		return lats[min(len(lats)-1, int(p*float64(len(lats))))]
	}
	t.Logf("cgroup %d MiB, memory limit %d MiB, budget %d MiB; attack: %d REST readers of %d records that never read, %d gRPC connections x %d zero-window list calls of %d records, held %v",
		plan.cgroup>>20, limit>>20, limit/4>>20, plan.rest, api.MaxRecords, plan.grpc, plan.streams, api.MaxRecords, plan.hold)
	t.Logf("RSS: idle %.1f MiB, peak %.1f MiB during the attack (%.1f MiB overall), %.1f MiB %v after the attackers left; budget used at the end of the attack %s; cgroup max usage %s B, failcnt %s, oom_kill %s, under_oom %s",
		mibOf(idle), mibOf(attackPeak), mibOf(peak.Load()), mibOf(after), settled.Round(100*time.Millisecond), used,
		g.read("memory.max_usage_in_bytes"), g.read("memory.failcnt"), kills, under)
	t.Logf("well-behaved client: %d rounds (REST /healthz + gRPC health + GetVersion), latency p50 %v p99 %v max %v, %d failed; its large call: %v",
		len(lats), q(0.5), q(0.99), q(1), len(failures), errOrOK(largeErr))

	if err := syscall.Kill(pid, 0); err != nil {
		t.Errorf("the server process is gone: %v (oom_kill %s)", err, kills)
	}
	if kills != "0" {
		t.Errorf("the cgroup's OOM killer ran %s times", kills)
	}
	if p := peak.Load(); p >= limit {
		t.Errorf("peak RSS %.1f MiB, want under the memory limit %.1f MiB", mibOf(p), mibOf(limit))
	}
	if len(failures) > 0 || len(lats) == 0 {
		t.Errorf("well-behaved client: %d of %d rounds failed; first: %v", len(failures), len(lats), append(failures, "")[0])
	}
	if after > target {
		t.Errorf("RSS %.1f MiB a minute after the attack, want at most %.1f MiB (idle %.1f MiB)", mibOf(after), mibOf(target), mibOf(idle))
	}
}

func mibOf(n int64) float64 { return float64(n) / (1 << 20) }

func errOrOK(err error) string {
	if err == nil {
		return "served"
	}
	return err.Error()
}

// scrapeBudget reads the budget gauges from /metrics.
func scrapeBudget(t *testing.T, hc *http.Client, addr string) string {
	r, err := hc.Get("http://" + addr + api.PathMetrics)
	if err != nil {
		return "(metrics: " + err.Error() + ")"
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	var out []string
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, "meteorbench_memory_budget_used_bytes ") || strings.HasPrefix(line, "meteorbench_memory_budget_refused_total ") {
			out = append(out, line)
		}
	}
	return strings.Join(out, ", ")
}

// TestMemoryBudgetRefuses: with the server's budget held by REST clients
// that do not read, a large call waits about budgetWait and is refused, 503
// with a JSON error on REST and RESOURCE_EXHAUSTED on gRPC, while /healthz
// and GetVersion are served at once.
func TestMemoryBudgetRefuses(t *testing.T) {
	c := startClient(t, server.Config{MemoryLimit: 64 << 20}) // a 16 MiB budget
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// Each answer of 100,000 records holds about 0.4 MiB of the budget
	// while it is blocked on a client that does not read: 60 of them hold
	// all of it.
	for range 60 {
		nc := dialRaw(t, c.addr)
		conns = append(conns, nc)
		fmt.Fprintf(nc, "GET %s?records=%d HTTP/1.1\r\nHost: x\r\n\r\n", api.PathList, api.MaxRecords)
	}
	time.Sleep(time.Second) // the answers start
	start := time.Now()
	resp, body := c.do(t, http.MethodGet, api.PathList, nil)
	waited := time.Since(start)
	wantJSONError(t, resp, body, "server busy")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("REST large call: %s, Retry-After %q; want 503 with Retry-After", resp.Status, resp.Header.Get("Retry-After"))
	}
	t.Logf("REST large call refused after %v: %s", waited.Round(time.Millisecond), body)
	// (10,000 records: what the budget has left may fit 1000.)
	_, err := c.grpc.GetLargePayloadAsList(metadata.AppendToOutgoingContext(c.ctx(t), api.MetadataRecords, "10000"), &pb.EmptyRequest{})
	if st, _ := status.FromError(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "memory budget") {
		t.Errorf("gRPC large call: %v, want RESOURCE_EXHAUSTED naming the memory budget", err)
	}
	start = time.Now()
	resp, body = c.do(t, http.MethodGet, api.PathHealth, nil)
	wantStatus(t, resp, body, http.StatusOK)
	if _, err := c.grpc.GetVersion(c.ctx(t), &pb.EmptyRequest{}); err != nil {
		t.Errorf("GetVersion while the budget is spent: %v", err)
	}
	t.Logf("/healthz and GetVersion while the budget is spent: %v", time.Since(start).Round(time.Millisecond))
}
