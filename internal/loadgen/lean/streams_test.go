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
	"github.com/meteorbench/meteorbench/internal/loadgen/restcall"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/testmode"
)

// streamTally is what streamCalls measured: messages, streams opened, and
// the wire bytes of them all.
type streamTally struct {
	messages, setups int
	bytes            wire.Stats
}

// streamCalls makes calls calls of a stream scenario on each of workers
// callers in parallel, from a new client (its dials and handshakes
// counted), and closes it; every call must succeed.
func streamCalls(t testing.TB, open func(api.Protocol, call.Options) (call.Client, error), o call.Options, p api.Protocol, sc api.Scenario, workers, calls int) streamTally {
	t.Helper()
	d := &wire.Dialer{}
	o.Dialer, o.Workers = d, workers
	c, err := open(p, o)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var run streamTally
	var wg sync.WaitGroup
	for range workers {
		a, err := c.Caller(sc)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for range calls {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				out, err := a.Call(ctx)
				cancel()
				if err != nil {
					t.Errorf("%s %s: %v (class %s)", p, sc, err, call.Classify(context.Background(), err))
					return
				}
				mu.Lock()
				run.messages++
				if out.Setup > 0 {
					run.setups++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	c.Close()
	run.bytes = d.Stats()
	return run
}

// TestLeanStreams: upload, chat and feed (WebSocket, and SSE for JSON)
// over REST and REST+protobuf through the lean engine against the real
// server, concurrently: every message succeeds, the streams open every
// --messages, and the bytes per message (both ways, the handshakes' and
// closes' share included) are within 2% of the standard engine's.
func TestLeanStreams(t *testing.T) {
	addr := servertest.Start(t, server.Config{Token: "tok"})
	workers, perStream, streams := 3, 20, 3
	if testmode.Short(t, "2 streams of 10 messages on 2 workers") {
		workers, perStream, streams = 2, 10, 2
	}
	type cell struct {
		p   api.Protocol
		sc  api.Scenario
		sse bool
	}
	var cells []cell
	for _, p := range []api.Protocol{api.REST, api.RESTProtobuf} {
		for _, sc := range api.StreamScenarios() {
			cells = append(cells, cell{p, sc, false})
		}
	}
	cells = append(cells, cell{api.REST, api.Feed, true})
	for _, tc := range cells {
		name := fmt.Sprintf("%s/%s", tc.p, tc.sc)
		if tc.sse {
			name += "/sse"
		}
		t.Run(name, func(t *testing.T) {
			o := call.Options{Target: addr, Token: "tok", Messages: perStream}
			if tc.sse {
				o.Settings = map[string]string{restcall.SettingFeedTransport: restcall.FeedSSE}
			}
			calls := perStream * streams
			l := streamCalls(t, lean.New, o, tc.p, tc.sc, workers, calls)
			s := streamCalls(t, standard, o, tc.p, tc.sc, workers, calls)
			if want := workers * calls; l.messages != want || s.messages != want {
				t.Fatalf("messages: lean %d, standard %d, want %d", l.messages, s.messages, want)
			}
			if want := workers * streams; l.setups != want {
				t.Errorf("streams opened: lean %d, want %d (standard %d)", l.setups, want, s.setups)
			}
			n := float64(l.messages)
			lt, st := float64(l.bytes.Sent+l.bytes.Received)/n, float64(s.bytes.Sent+s.bytes.Received)/n
			t.Logf("bytes per message: lean %.1f sent + %.1f received, standard %.1f + %.1f; connections lean %d, standard %d",
				float64(l.bytes.Sent)/n, float64(l.bytes.Received)/n, float64(s.bytes.Sent)/n, float64(s.bytes.Received)/n, l.bytes.Dials, s.bytes.Dials)
			if d := lt/st - 1; math.Abs(d) > 0.02 {
				t.Errorf("bytes per message: lean %.1f, standard %.1f (%+.1f%%)", lt, st, 100*d)
			}
		})
	}
}
