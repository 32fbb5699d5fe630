package lean_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/lean"
	"github.com/meteorbench/meteorbench/internal/loadgen/loadgentest"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/payload/payloadtest"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/testmode"
)

// standard opens the standard engine's client of protocol, from the load
// generator's engine registry (plan), which has every protocol.
func standard(protocol api.Protocol, o call.Options) (call.Client, error) {
	e, err := plan.EngineOf(plan.Config{}, results.CellKey{})
	if err != nil {
		return nil, err
	}
	return e.Client(plan.Config{}, protocol, o)
}

// perCall makes n calls of a scenario with workers callers in parallel and
// returns the wire bytes per call; every call must succeed.
func perCall(t testing.TB, open func(api.Protocol, call.Options) (call.Client, error), addr string, p api.Protocol, sc api.Scenario, workers, n int) wire.Stats {
	t.Helper()
	d := &wire.Dialer{}
	c, err := open(p, call.Options{Target: addr, Workers: workers, Dialer: d, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	callers := make([]call.Caller, workers)
	for i := range callers {
		if callers[i], err = c.Caller(sc); err != nil {
			t.Fatal(err)
		}
		if _, err := callers[i].Call(context.Background()); err != nil { // connect, warm up
			t.Fatalf("%s %s: %v", p, sc, err)
		}
	}
	before := d.Stats()
	var wg sync.WaitGroup
	for _, a := range callers {
		wg.Go(func() {
			for range n / workers {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := a.Call(ctx)
				cancel()
				if err != nil {
					t.Errorf("%s %s: %v", p, sc, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return d.Stats().Sub(before)
}

// TestLeanAgreesOnBytes: every scenario of every protocol succeeds over
// the lean engine against the real server, concurrently, and its bytes per
// call (both ways) are within 2% of the standard engine's. REST's are the
// same bytes; gRPC's differ by control frames (window updates, BDP pings
// and their acknowledgements, which both clients send but not at the same
// moments once several calls share the connection), a few hundred bytes on
// a 100 KB call. gRPC's small call is the exception: those frames are half
// its bytes, so it is only logged here (TestGRPCFrames compares them one
// call at a time).
func TestLeanAgreesOnBytes(t *testing.T) {
	addr := servertest.Start(t, server.Config{Token: "tok"})
	n, scenarios := 40, api.Scenarios()
	if testmode.Short(t, "the same check, 4 calls, no large (the small call's path with 1000 records)") {
		n, scenarios = 4, []api.Scenario{api.Small, api.Stream, api.Post}
	}
	for _, p := range api.DefaultProtocols() {
		for _, sc := range scenarios {
			t.Run(string(p)+"/"+string(sc), func(t *testing.T) {
				l := perCall(t, lean.New, addr, p, sc, 4, n)
				s := perCall(t, standard, addr, p, sc, 4, n)
				fn := float64(n)
				lt, st := float64(l.Sent+l.Received)/fn, float64(s.Sent+s.Received)/fn
				t.Logf("bytes per call: lean %.1f sent + %.1f received, standard %.1f + %.1f", float64(l.Sent)/fn, float64(l.Received)/fn, float64(s.Sent)/fn, float64(s.Received)/fn)
				if d := lt/st - 1; (d > 0.02 || d < -0.02) && !(p == api.GRPC && sc == api.Small) {
					t.Errorf("bytes per call: lean %.1f, standard %.1f (%+.1f%%)", lt, st, 100*d)
				}
			})
		}
	}
}

// TestWrongAnswerCounted: a server that answers a wrong version on 1 call
// in 500 has every one of them reported as an invalid response, though the
// lean engine fully decodes only a sample.
func TestWrongAnswerCounted(t *testing.T) {
	for _, p := range api.DefaultProtocols() {
		t.Run(string(p), func(t *testing.T) {
			srv := loadgentest.Start(t, loadgentest.Config{WrongEvery: 500})
			c, a := loadgentest.Open(t, lean.New, p, call.Options{Target: srv.Addr, Workers: 1, Dialer: &wire.Dialer{}}, api.Small)
			defer c.Close()
			const calls = 2000
			invalid := 0
			for range calls {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := a.Call(ctx)
				switch cl := call.Classify(ctx, err); cl {
				case "":
				case results.ClassInvalid:
					invalid++
				default:
					t.Fatalf("class %q: %v", cl, err)
				}
				cancel()
			}
			if want := calls / 500; invalid != want {
				t.Errorf("%d invalid responses, want %d", invalid, want)
			}
		})
	}
}

// BenchmarkLean is one small call per iteration over each engine and
// protocol against the real server in this process (ns/op is client plus
// server); allocs/op are the client's and the server's.
func BenchmarkLean(b *testing.B) {
	addr := servertest.Start(b, server.Config{})
	engines := map[string]func(api.Protocol, call.Options) (call.Client, error){"lean": lean.New, "standard": standard}
	for _, e := range []string{"lean", "standard"} {
		for _, p := range api.DefaultProtocols() {
			for _, sc := range []api.Scenario{api.Small, api.Large} {
				b.Run(e+"/"+string(p)+"/"+string(sc), func(b *testing.B) {
					benchCalls(b, engines[e], p, sc, addr, false)
				})
			}
		}
	}
}

// benchCalls makes b.N calls of a scenario, one at a time; aged, a lean
// client is past its first second (lean.Age).
func benchCalls(b *testing.B, open func(api.Protocol, call.Options) (call.Client, error), p api.Protocol, sc api.Scenario, addr string, aged bool) {
	c, err := open(p, call.Options{Target: addr, Workers: 1, Dialer: &wire.Dialer{}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if aged {
		lean.Age(c)
	}
	a, err := c.Caller(sc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Call(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// A server that allows 2 concurrent streams per connection: 8 callers on
// the one connection wait for a stream slot, as grpc-go's do, rather than
// have their streams refused.
func TestGRPCMaxConcurrentStreams(t *testing.T) {
	addr := servertest.Start(t, server.Config{MaxConcurrentStreams: 2})
	perCall(t, lean.New, addr, api.GRPC, api.Large, 8, 80)
}

// TestLeanPayload: against a server serving the user's payload (the
// nested example), every scenario of every protocol succeeds over the
// lean engine, with and without --records, and its bytes per call are
// within 2% of the standard engine's; gRPC's within 2% or 12%, as its
// control frames (window updates, BDP pings, sent by both clients but not
// at the same moments) are a larger share of the few kilobytes of 7
// records and vary from run to run (seen: 2,604 against 2,356 bytes for
// the post, 2,620 against 2,604 the next run), and gRPC's small call is
// only logged, as in TestLeanAgreesOnBytes (139 against 167 bytes seen): the lean gRPC client calls the
// payload's service, uploads its items and checks the items it gets back.
func TestLeanPayload(t *testing.T) {
	p := payloadtest.Load(t, payloadtest.Example(t, "nested.json"), payload.Options{})
	addr := servertest.Start(t, server.Config{Payload: p, Token: "tok"})
	records := []int{0, 7}
	if testmode.Short(t, "7 records only (the default's calls run in the normal step)") {
		records = records[1:]
	}
	for _, records := range records {
		withPayload := func(open func(api.Protocol, call.Options) (call.Client, error)) func(api.Protocol, call.Options) (call.Client, error) {
			return func(pr api.Protocol, o call.Options) (call.Client, error) {
				o.Payload, o.Records = p, records
				return open(pr, o)
			}
		}
		for _, pr := range api.DefaultProtocols() {
			for _, sc := range api.Scenarios() {
				t.Run(fmt.Sprintf("%s/%s/records=%d", pr, sc, records), func(t *testing.T) {
					const n = 20
					l := perCall(t, withPayload(lean.New), addr, pr, sc, 2, n)
					s := perCall(t, withPayload(standard), addr, pr, sc, 2, n)
					lt, st := float64(l.Sent+l.Received)/n, float64(s.Sent+s.Received)/n
					t.Logf("bytes per call: lean %.1f, standard %.1f", lt, st)
					// Under the race detector gRPC's control frames (BDP pings
					// follow the calls' timing) are logged only: 12.3% apart on
					// a post of 7 records once. The normal step judges them.
					grpcLogged := pr == api.GRPC && (sc == api.Small || testmode.Race)
					if d := lt/st - 1; math.Abs(d) > 0.02 && !grpcLogged && !(pr == api.GRPC && math.Abs(d) <= 0.12) {
						t.Errorf("bytes per call: lean %.1f, standard %.1f (%+.1f%%)", lt, st, 100*d)
					}
				})
			}
		}
	}
}

// TestLeanPayloadWrongTarget: the lean gRPC client with a payload against
// the meteorites' server is refused by the server (no such service), and
// without one against a payload server the meteorites' calls are: never
// an answer taken as valid.
func TestLeanPayloadWrongTarget(t *testing.T) {
	p := payloadtest.Load(t, payloadtest.Example(t, "nested.json"), payload.Options{})
	for _, tc := range []struct {
		name string
		srv  server.Config
		o    *payload.Payload
	}{
		{"payload client, meteorites server", server.Config{}, p},
		{"meteorites client, payload server", server.Config{Payload: p}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := servertest.Start(t, tc.srv)
			c, a := loadgentest.Open(t, lean.New, api.GRPC, call.Options{Target: addr, Workers: 1, Dialer: &wire.Dialer{}, Payload: tc.o}, api.Large)
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := a.Call(ctx); err == nil {
				t.Fatal("a call to the wrong service succeeded")
			} else {
				t.Logf("refused: %v", err)
			}
		})
	}
}
