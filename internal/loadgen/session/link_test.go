package session_test

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/target"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/timing"
)

func mustLink(t *testing.T, s string) link.Spec {
	t.Helper()
	l, err := link.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A link is a dimension of the plan: a cell per link, keyed and recorded,
// and the bytes counted per call are the application's, the same over the
// link as without it.
func TestRunLinkSweep(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	cfg := quick(addr)
	cfg.Scenarios = []api.Scenario{api.Small}
	cfg.Protocols = []api.Protocol{api.REST, api.GRPC}
	cfg.Links = []link.Spec{{}, mustLink(t, "1gbit/2ms")}
	res := run(t, cfg)

	if got, want := res.Settings.Links, []string{"none", "1gbit/2ms"}; !slices.Equal(got, want) {
		t.Errorf("settings links %q, want %q", got, want)
	}
	var keys []string
	for _, c := range res.Cells {
		keys = append(keys, c.Key())
		if c.Errors > 0 || c.Calls == 0 {
			t.Errorf("%s: %d calls, %d errors %v", c.Key(), c.Calls, c.Errors, c.ErrorExamples)
		}
	}
	want := []string{"small/rest/b3/c1", "small/grpc/b3/c1", "small/rest/b3/c1/l1gbit-2ms", "small/grpc/b3/c1/l1gbit-2ms"}
	if !slices.Equal(keys, want) {
		t.Fatalf("cells %q, want %q", keys, want)
	}
	for i := range 2 {
		plain, over := res.Cells[i], res.Cells[i+2]
		// HTTP/1.1's bytes are the same call after call; gRPC's own control
		// frames (BDP pings, window updates: 13-26 bytes each) follow the
		// timing, so a few of them per cell differ either way, spread over
		// its few calls (seen: 24 bytes per call apart, of about 110).
		slack := 0.0
		if over.Protocol == api.GRPC {
			slack = 8 * 26 / float64(min(plain.Calls, over.Calls))
		}
		if d := math.Abs(over.BytesPerCall.Sent-plain.BytesPerCall.Sent) + math.Abs(over.BytesPerCall.Received-plain.BytesPerCall.Received); d > slack {
			t.Errorf("%s: %+v bytes per call over the link, %+v without: want the same application bytes", over.Protocol, over.BytesPerCall, plain.BytesPerCall)
		}
		if over.LatencyUS.P50 < 2000 {
			t.Errorf("%s: p50 %.0f µs over a 2 ms RTT link", over.Key(), over.LatencyUS.P50)
		}
	}
}

func TestRunLinkDefault(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	cfg := quick(addr)
	cfg.Scenarios = []api.Scenario{api.Small}
	res := run(t, cfg)
	if res.Settings.Links != nil {
		t.Errorf("settings links %q without --link, want none recorded", res.Settings.Links)
	}
	for _, c := range res.Cells {
		if c.Link != "" {
			t.Errorf("%s: link %q", c.Key(), c.Link)
		}
	}
	cfg.Links = []link.Spec{mustLink(t, "vps"), mustLink(t, "100mbit/20ms")}
	if err := cfg.Validate(); err == nil {
		t.Error("the same link twice: no error")
	}
}

// linkConfig is a timed run of one scenario over REST and gRPC, batch 1,
// through link l.
func linkConfig(addr string, l link.Spec, sc api.Scenario, duration, warmup time.Duration) plan.Config {
	return plan.Config{
		Target:    target.One(addr),
		Protocols: []api.Protocol{api.REST, api.GRPC},
		Scenarios: []api.Scenario{sc},
		Batches:   []int{1},
		Links:     []link.Spec{l},
		Duration:  duration,
		Warmup:    warmup,
	}
}

// Physics: where the link is the limit, the payload's direction carries
// the link's rate, never more; a small call at concurrency 1 takes the RTT
// and little more.
func TestRunLinkPhysics(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: about 10 s of load for timing claims; runs in the normal step")
	}
	if session.RaceDetector {
		t.Skip("timing against physics: the race detector slows the load generator several times over")
	}
	addr := servertest.Start(t, server.Config{})

	// Timing-dependent (a busy machine's relay falls short of the link's
	// rate; its scheduling adds to the RTT): timing.Retry, three attempts,
	// each one's figures logged. Above the link's rate and below the RTT
	// is physics, never retried.
	t.Run("bandwidth", func(t *testing.T) {
		l := mustLink(t, "10mbit/5ms")
		cfg := linkConfig(addr, l, api.Large, 2500*time.Millisecond, 500*time.Millisecond)
		cfg.Concurrency = []int{4}
		timing.Retry(t, 3, func(attempt int) (misses []string) {
			for _, c := range run(t, cfg).Cells {
				carried := c.CallsPerS * c.BytesPerCall.Received // bytes/s, framing included
				ratio := carried / l.BytesPerSecond()
				t.Logf("attempt %d, %s: %.2f calls/s × %.0f B = %.3f MB/s, %.3f of the link's %.3f MB/s", attempt, c.Key(), c.CallsPerS, c.BytesPerCall.Received, carried/1e6, ratio, l.BytesPerSecond()/1e6)
				if c.Errors > 0 || ratio > 1.01 {
					t.Fatalf("%s: %d errors, %.3f of the link rate: more than the link can carry (+1%% for a chunk at the window's edge)", c.Key(), c.Errors, ratio)
				}
				if ratio < 0.9 {
					misses = append(misses, fmt.Sprintf("%s: %.3f of the link's rate, want at least 0.90", c.Key(), ratio))
				}
			}
			return misses
		})
	})

	t.Run("rtt", func(t *testing.T) {
		l := mustLink(t, "100mbit/20ms")
		cfg := linkConfig(addr, l, api.Small, 1500*time.Millisecond, 300*time.Millisecond)
		rtt := float64(l.RTT().Microseconds())
		timing.Retry(t, 3, func(attempt int) (misses []string) {
			for _, c := range run(t, cfg).Cells {
				p50 := c.LatencyUS.P50
				t.Logf("attempt %d, %s: p50 %.0f µs, p99 %.0f µs over a %.0f µs RTT", attempt, c.Key(), p50, c.LatencyUS.P99, rtt)
				if c.Errors > 0 || p50 < rtt || math.IsNaN(p50) {
					t.Fatalf("%s: %d errors, p50 %.0f µs: want no errors and at least the RTT (physics)", c.Key(), c.Errors, p50)
				}
				// 3 ms of slack: the server's work, two relay hops, and a
				// busy CI machine's scheduling; measured here about 0.3 ms.
				if p50 > rtt+3000 {
					misses = append(misses, fmt.Sprintf("%s: p50 %.0f µs, want at most RTT + 3 ms", c.Key(), p50))
				}
			}
			return misses
		})
	})
}
