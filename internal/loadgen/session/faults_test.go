package session_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"

	"google.golang.org/grpc/codes"

	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/loadgentest"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/tcptest"
)

// Wrong answers are errors of class invalid-response, never successes.
func TestRunCatchesWrongAnswers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       loadgentest.Config
		scenarios []api.Scenario
		example   string // the invalid-response message kept
	}{
		{"999 records", loadgentest.Config{Records: 999}, []api.Scenario{api.Large, api.Stream}, "999 records, want 1000"},
		{"wrong version", loadgentest.Config{Version: "API Version 2.0"}, []api.Scenario{api.Small}, `answer "API Version 2.0", want "API Version 1.0"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := loadgentest.Start(t, tc.cfg)
			cfg := quick(srv.Addr)
			cfg.Scenarios = tc.scenarios
			cfg.NoProbe = true // every call is wrong on purpose
			res := run(t, cfg)
			for _, c := range res.Cells {
				if c.Calls != 0 || c.Errors != 6 || c.ErrorClasses["invalid-response"] != 6 {
					t.Errorf("%s: %d successes, %d errors %v; want 0 and 6 invalid-response", c.Key(), c.Calls, c.Errors, c.ErrorClasses)
				}
				if got := c.ErrorExamples["invalid-response"]; got != tc.example || len(c.ErrorExamples) != 1 {
					t.Errorf("%s: error examples %q, want invalid-response: %q", c.Key(), c.ErrorExamples, tc.example)
				}
				if c.LatencyUS != (results.Latency{}) || c.Batches != 0 {
					t.Errorf("%s: failed calls reached the latency histogram (%+v) or batch timing (%d)", c.Key(), c.LatencyUS, c.Batches)
				}
			}
			if len(res.Cells) != len(tc.scenarios)*3 {
				t.Errorf("%d cells", len(res.Cells))
			}
		})
	}
}

// Error classes: HTTP statuses, gRPC codes, timeouts.
func TestRunErrorClasses(t *testing.T) {
	stall := func(ctx context.Context, _ int64) { <-ctx.Done() } // answer nothing until the client gives up
	for _, tc := range []struct {
		name  string
		cfg   loadgentest.Config
		proto api.Protocol
		class results.ErrorClass
		run   func(*plan.Config)
	}{
		{"http 503 json", loadgentest.Config{Status: http.StatusServiceUnavailable}, api.REST, "http-503", nil},
		{"http 503 protobuf", loadgentest.Config{Status: http.StatusServiceUnavailable}, api.RESTProtobuf, "http-503", nil},
		{"http 500", loadgentest.Config{Status: http.StatusInternalServerError}, api.REST, "http-500", nil},
		{"grpc unavailable", loadgentest.Config{Code: codes.Unavailable}, api.GRPC, "grpc-Unavailable", nil},
		{"grpc resource exhausted", loadgentest.Config{Code: codes.ResourceExhausted}, api.GRPC, "grpc-ResourceExhausted", nil},
		{"grpc internal", loadgentest.Config{Code: codes.Internal}, api.GRPC, "grpc-Internal", nil},
		{"timeout rest", loadgentest.Config{Hook: stall}, api.REST, "timeout", withTimeout},
		{"timeout rest-protobuf", loadgentest.Config{Hook: stall}, api.RESTProtobuf, "timeout", withTimeout},
		{"timeout grpc", loadgentest.Config{Hook: stall}, api.GRPC, "timeout", withTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := loadgentest.Start(t, tc.cfg)
			cfg := quick(srv.Addr)
			cfg.Protocols = []api.Protocol{tc.proto}
			cfg.Scenarios = []api.Scenario{api.Small, api.Stream}
			cfg.NoProbe = true // every call fails on purpose
			if tc.run != nil {
				tc.run(&cfg)
			}
			res := run(t, cfg)
			for _, c := range res.Cells {
				if c.Calls != 0 || c.Errors != 6 || c.ErrorClasses[tc.class] != 6 {
					t.Errorf("%s: %d successes, %d errors %v; want 6 of class %s", c.Key(), c.Calls, c.Errors, c.ErrorClasses, tc.class)
				}
			}
		})
	}
}

func withTimeout(c *plan.Config) {
	c.Timeout = 50 * time.Millisecond
	c.Iterations = 1
	c.Batches = []int{6}
}

// A server that refuses the token ends the run at once: every other cell
// would fail the same way.
func TestRunStopsOnRefusedToken(t *testing.T) {
	srv := loadgentest.Start(t, loadgentest.Config{Status: http.StatusUnauthorized})
	res, err := session.Run(context.Background(), quick(srv.Addr))
	if err == nil || !strings.Contains(err.Error(), "http-401") || !strings.Contains(err.Error(), "token") {
		t.Fatalf("Run error = %v, want one naming http-401 and the token", err)
	}
	if res == nil || len(res.Cells) != 1 || (res.Stop.Reason != results.StopFailed || res.Stop.Err == "") {
		t.Fatalf("result %+v, want the one failed cell and a failed stop reason", res)
	}
	if got := res.Cells[0].ErrorExamples["http-401"]; got != "status 401: injected fault" {
		t.Errorf("http-401 example %q, want the server's message", got)
	}
}

// Ctrl-C mid-cell: the run stops promptly with what was measured, marked
// interrupted.
func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := loadgentest.Start(t, loadgentest.Config{Hook: func(_ context.Context, n int64) {
		if n == 300 { // well into the second cell: the first makes 200 calls
			cancel()
		}
	}})
	cfg := quick(srv.Addr)
	cfg.Protocols = []api.Protocol{api.REST, api.GRPC}
	cfg.Scenarios = []api.Scenario{api.Small}
	cfg.Batches = []int{10}
	cfg.Iterations = 20 // 200 calls a cell
	cfg.Repeat = 2
	res, err := session.Run(ctx, cfg)
	if !errors.Is(err, session.ErrInterrupted) {
		t.Fatalf("Run error = %v, want ErrInterrupted", err)
	}
	if !res.Interrupted || res.Stop.Reason != results.StopInterrupted {
		t.Errorf("interrupted %v, stop reason %q", res.Interrupted, res.Stop)
	}
	if len(res.Cells) != 2 {
		t.Fatalf("%d cells, want the complete one and the partial one", len(res.Cells))
	}
	// (A 20 ms cell on a loaded machine may warn that its workers were not
	// kept busy: only the interruption must not show in it.)
	if c := res.Cells[0]; c.Calls != 200 || strings.Contains(strings.Join(c.Warnings, ";"), "interrupted") {
		t.Errorf("first cell: %d calls %v", c.Calls, c.Warnings)
	}
	c := res.Cells[1]
	if c.Calls == 0 || c.Calls >= 200 || c.Errors != 0 || !strings.Contains(strings.Join(c.Warnings, ";"), "interrupted") {
		t.Errorf("partial cell: %d calls, %d errors %v, warnings %v; want some successes, no errors, an 'interrupted' warning", c.Calls, c.Errors, c.ErrorClasses, c.Warnings)
	}
	if c.StopReason != results.StopInterrupted || res.Cells[0].StopReason != "" {
		t.Errorf("stop reasons %q, %q; want none for the complete cell, %q for the partial one", res.Cells[0].StopReason, c.StopReason, results.StopInterrupted)
	}
	assertRoundTrip(t, res)
}

// dyingServer is a test server that closes itself at its n-th data call.
func dyingServer(t *testing.T, n int64) *loadgentest.Server {
	var srv *loadgentest.Server
	var once sync.Once
	srv = loadgentest.Start(t, loadgentest.Config{Hook: func(_ context.Context, i int64) {
		if i == n {
			once.Do(func() { go srv.Close() })
		}
	}})
	return srv
}

// A server that dies mid-run: partial results, the errors counted, an
// error returned, no hang.
func TestRunServerDies(t *testing.T) {
	for proto, class := range map[api.Protocol]results.ErrorClass{api.REST: results.ClassTransport, api.GRPC: results.GRPCClass("Unavailable")} {
		t.Run(string(proto), func(t *testing.T) {
			srv := dyingServer(t, 100)
			cfg := quick(srv.Addr)
			cfg.Protocols = []api.Protocol{proto, api.RESTProtobuf}
			cfg.Scenarios = []api.Scenario{api.Small}
			cfg.Batches = []int{10}
			// Bounded by count, not time: the server dies at its 100th call
			// however slow the machine, and the failing calls that follow
			// use up the remaining batches quickly.
			cfg.Iterations = 200
			cfg.Concurrency = []int{2}
			res, err := session.Run(context.Background(), cfg)
			if err == nil || errors.Is(err, session.ErrInterrupted) || !strings.Contains(err.Error(), "went away") {
				t.Fatalf("Run error = %v, want 'went away'", err)
			}
			if res == nil || (res.Stop.Reason != results.StopFailed || res.Stop.Err == "") || res.Interrupted {
				t.Fatalf("result %+v, want a failed stop reason", res)
			}
			if len(res.Cells) != 1 {
				t.Fatalf("%d cells, want the one that saw the server die", len(res.Cells))
			}
			c := res.Cells[0]
			if c.Calls < 90 || c.Errors == 0 {
				t.Errorf("%d successes, %d errors %v; want about 100, then errors", c.Calls, c.Errors, c.ErrorClasses)
			}
			if c.ErrorClasses[class] == 0 {
				t.Errorf("error classes %v, want %s", c.ErrorClasses, class)
			}
			for cl := range c.ErrorClasses {
				if !cl.Unreachable() && !cl.InvalidResponse() {
					t.Errorf("error class %q for a dead server", cl)
				}
			}
		})
	}
}

// A server that dies mid-cell, in a cell bounded only by a long time: the
// cell stops TargetDownAfter after the errors begin, with its stop reason,
// and the workers' backoff keeps the count of failed calls small (before
// backoff: about 10,000 failed dials a second for the rest of the cell).
func TestCellStopsWhenTargetIsDown(t *testing.T) {
	for _, tc := range []struct {
		proto api.Protocol
		rate  float64
	}{{api.REST, 0}, {api.GRPC, 0}, {api.REST, 5000}} {
		t.Run(fmt.Sprintf("%s rate %v", tc.proto, tc.rate), func(t *testing.T) {
			const workers = 4
			srv := dyingServer(t, 50)
			cfg := quick(srv.Addr)
			cfg.Protocols = []api.Protocol{tc.proto}
			cfg.Scenarios = []api.Scenario{api.Small}
			cfg.Batches = []int{10}
			cfg.Iterations = 0
			cfg.Duration = time.Minute // the cell must end long before
			cfg.Concurrency = []int{workers}
			cfg.Rate = tc.rate
			res, err := session.Run(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), "went away") {
				t.Fatalf("Run error = %v, want 'went away'", err)
			}
			if len(res.Cells) != 1 {
				t.Fatalf("%d cells", len(res.Cells))
			}
			c := res.Cells[0]
			if c.StopReason != results.StopTargetDown || !strings.Contains(strings.Join(c.Warnings, ";"), "transport errors") {
				t.Errorf("stop reason %q, warnings %v; want %q and a warning", c.StopReason, c.Warnings, results.StopTargetDown)
			}
			// Per worker: the calls in flight when the server died, then at
			// most TargetDownAfter/TransportBackoffMax + 7 more; doubled.
			perWorker := int64(engine.TargetDownAfter/engine.TransportBackoffMax) + 8
			if bound := 2 * workers * perWorker; c.Errors == 0 || c.Errors > bound {
				t.Errorf("%d failed calls %v, want 1..%d", c.Errors, c.ErrorClasses, bound)
			}
			t.Logf("%d successes, %d failed calls %v, stopped after %.2f s", c.Calls, c.Errors, c.ErrorClasses, c.DurationS)
			if c.Calls < 40 || c.BytesPerCall.Sent <= 0 {
				t.Errorf("%d successes, bytes per call %+v", c.Calls, c.BytesPerCall)
			}
		})
	}
}

// A target that does not serve the contract (here a plain HTTP server that
// answers 404 to everything, /healthz included) is refused before the first
// cell, with what each probe got, quickly: no cell runs to its end on
// errors.
func TestRunRefusesNonContractTarget(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	cfg := quick(strings.TrimPrefix(srv.URL, "http://"))
	cfg.Iterations, cfg.Duration = 0, time.Minute
	t0 := time.Now()
	res, err := session.Run(context.Background(), cfg)
	took := time.Since(t0)
	if !errors.Is(err, session.ErrNotContract) || res != nil {
		t.Fatalf("Run = %v, %v; want refused as not serving the contract, no result", res, err)
	}
	for _, want := range []string{"small rest: http-404", "post rest-protobuf: http-404", "gRPC GetVersion"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if took > 30*time.Second {
		t.Errorf("refused after %v: the probes should fail fast", took)
	}
	t.Logf("refused after %v: %v", took, err)
}

// dropFirst is a listener that closes the first connection it accepts
// unanswered, as a server not up yet refuses one.
type dropFirst struct {
	net.Listener
	once    sync.Once
	dropped atomic.Bool
}

func (l *dropFirst) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		first := false
		l.once.Do(func() { first = true })
		if !first {
			return c, nil
		}
		c.Close()
		l.dropped.Store(true)
	}
}

// A server that speaks both HTTP versions on one port (meteorbench serve)
// whose first connection fails is not "HTTP/2 only": the health check,
// failed, finds the port answering HTTP/2's preface and asks again before
// saying so, and the run goes on. A generator of a Docker Swarm stack,
// its first ask refused while the server came up, was told to give its
// target as --target grpc=.
func TestRunTargetDropsFirstConnection(t *testing.T) {
	srv, err := server.New(server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	dl := &dropFirst{}
	addr := tcptest.Loopback(t, "a server dropping its first connection", func(ctx context.Context, ln net.Listener) error {
		dl.Listener = ln // read by Serve's goroutines only
		return srv.Serve(ctx, dl)
	})
	cfg := quick(addr)
	cfg.Protocols = []api.Protocol{api.REST, api.GRPC}
	cfg.Scenarios = []api.Scenario{api.Small}
	res, err := session.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !dl.dropped.Load() {
		t.Fatal("no connection was dropped: the test did not test")
	}
	for _, c := range res.Cells {
		if c.Errors != 0 || c.Calls == 0 {
			t.Errorf("%s: %d calls, %d errors", c.Key(), c.Calls, c.Errors)
		}
	}
}
