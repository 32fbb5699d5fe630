package link

import (
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/timing"
)

// serve starts a loopback TCP server that answers every request byte with
// reply bytes (one request byte, one response of reply bytes).
func serve(t *testing.T, reply int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				out := make([]byte, reply)
				var in [1]byte
				for {
					if _, err := io.ReadFull(c, in[:]); err != nil {
						return
					}
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func relay(t *testing.T, spec, target string) *Relay {
	t.Helper()
	s, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Listen(s, target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// calls makes request/response calls on c for d and returns their latencies.
func calls(t *testing.T, c net.Conn, reply int, d time.Duration) []time.Duration {
	var lat []time.Duration
	buf := make([]byte, reply)
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		t0 := time.Now()
		if _, err := c.Write([]byte{1}); err != nil {
			t.Error(err)
			return lat
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Error(err)
			return lat
		}
		lat = append(lat, time.Since(t0))
	}
	return lat
}

// A small call takes one RTT, a little more for the emulator's floor.
// Below the RTT is physics; the p50's slack depends on this machine's
// scheduling: timing.Retry, each attempt's figures logged.
func TestRelayRTT(t *testing.T) {
	r := relay(t, "1gbit/20ms", serve(t, 100))
	timing.Retry(t, 3, func(attempt int) []string {
		t0 := time.Now()
		c, err := r.DialContext(context.Background(), "tcp", "")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if d := time.Since(t0); d < 20*time.Millisecond {
			t.Fatalf("dial took %v, want at least the RTT", d)
		}
		lat := calls(t, c, 100, time.Second)
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		p50 := lat[len(lat)/2]
		t.Logf("attempt %d: %d calls, min %v, p50 %v, max %v", attempt, len(lat), lat[0], p50, lat[len(lat)-1])
		if lat[0] < 20*time.Millisecond {
			t.Fatalf("min %v: want at least the 20 ms RTT", lat[0])
		}
		if p50 > 22*time.Millisecond {
			return []string{fmt.Sprintf("p50 %v, want at most 22 ms", p50)}
		}
		return nil
	})
}

// With the bandwidth the limit, connections share it: together they get
// the link's rate, not one rate each. Above the rate is physics; how close
// below it they get depends on this machine's scheduling: timing.Retry.
func TestRelayBandwidthShared(t *testing.T) {
	const reply = 50_000
	r := relay(t, "10mbit/2ms", serve(t, reply))
	timing.Retry(t, 3, func(attempt int) []string {
		var mu sync.Mutex
		n := 0
		var wg sync.WaitGroup
		const d = 2 * time.Second
		t0 := time.Now()
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := r.DialContext(context.Background(), "tcp", "")
				if err != nil {
					t.Error(err)
					return
				}
				defer c.Close()
				k := len(calls(t, c, reply, d))
				mu.Lock()
				n += k
				mu.Unlock()
			}()
		}
		wg.Wait()
		secs := time.Since(t0).Seconds()
		rate := float64(n*reply) / secs
		t.Logf("attempt %d: %d calls of %d B in %.2f s: %.3f MB/s (link 1.25 MB/s)", attempt, n, reply, secs, rate/1e6)
		if rate > 1.25e6 {
			t.Fatalf("%.3f MB/s: more than the link's 1.25 MB/s", rate/1e6)
		}
		if rate < 0.9*1.25e6 {
			return []string{fmt.Sprintf("%.3f MB/s, want within 10%% below the link's 1.25 MB/s", rate/1e6)}
		}
		return nil
	})
}
