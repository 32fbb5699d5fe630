package lean_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/lean"
	"github.com/meteorbench/meteorbench/internal/loadgen/loadgentest"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/rusage"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/tcptest"
)

// BenchmarkRESTSmallParallel is the lean REST client's small call as run
// --engine lean makes it with --concurrency 16: 16 callers, each over its
// own kept-alive connection, in the steady state (past the first second:
// one answer in 100 decoded), through call.DeadlineCaller as the engine's
// workers call. Against the canned answer ("canned") the process's CPU
// and context switches per call are the client's plus a server that does
// nothing but read and write; against the real server in this process
// ("server") they include its cost. Reported per call: allocations
// (allocs/op), CPU in µs (cpu-µs/call, getrusage: user + system) and
// context switches (cs/call, voluntary and involuntary: the netpoller's
// sleeps and the runtime's hand-offs between threads). Run it as the
// generator runs, on one processor: go test -run X -bench
// RESTSmallParallel -cpu 1 ./internal/loadgen/lean/. System calls per call
// need an outside counter: perf stat -e raw_syscalls:sys_enter on the
// benchmark binary (about 1 write, 1 read and under 1 epoll_pwait per call
// here).
func BenchmarkRESTSmallParallel(b *testing.B) {
	for _, tc := range []struct {
		name string
		addr func(testing.TB) string
	}{
		{"canned", func(tb testing.TB) string {
			return canned(tb, []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Tue, 01 Dec 2026 22:00:00 GMT\r\nContent-Length: 18\r\n\r\n\"API Version 1.0\"\n"))
		}},
		{"server", func(tb testing.TB) string { return servertest.Start(tb, server.Config{}) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			benchParallel(b, tc.addr(b), 16)
		})
	}
}

// benchParallel makes b.N small REST calls with n callers in parallel.
func benchParallel(b *testing.B, addr string, n int) {
	c, err := lean.New(api.REST, call.Options{Target: addr, Workers: n, Dialer: &wire.Dialer{}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	lean.Age(c)
	callers := make([]call.DeadlineCaller, n)
	for i := range callers {
		a, err := c.Caller(api.Small)
		if err != nil {
			b.Fatal(err)
		}
		callers[i] = a.(call.DeadlineCaller)
		if _, err := callers[i].CallBy(context.Background(), time.Now().Add(5*time.Second)); err != nil { // dial
			b.Fatal(err)
		}
	}
	var mu sync.Mutex
	next := 0
	b.SetParallelism(n) // with -cpu 1: n goroutines, one per caller
	b.ReportAllocs()
	cpu0, cs0 := rusage.CPU(), switches()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		mu.Lock()
		a := callers[next%n]
		next++
		mu.Unlock()
		ctx := context.Background()
		for pb.Next() {
			if _, err := a.CallBy(ctx, time.Now().Add(5*time.Second)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	calls := float64(b.N)
	b.ReportMetric(float64(rusage.CPU()-cpu0)/1e3/calls, "cpu-µs/call")
	b.ReportMetric(float64(switches()-cs0)/calls, "cs/call")
}

// switches is the process's context switches so far.
func switches() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Nvcsw + ru.Nivcsw
}

// TestRESTLargeRequest: a REST post of 50,000 records (about 11 MB) to a
// server that reads nothing for its first 200 ms: the socket takes only
// part of the round trip's own write, and the rest goes through the
// connection. The server answers once it has the whole body (its
// Content-Length), twice on one connection; every byte is counted.
func TestRESTLargeRequest(t *testing.T) {
	var got sync.Map // request number -> body bytes the server read
	addr := tcptest.Start(t, func(c net.Conn) {
		time.Sleep(200 * time.Millisecond)
		r := bufio.NewReader(c)
		for i := 0; ; i++ {
			req, err := http.ReadRequest(r)
			if err != nil {
				return
			}
			n, _ := io.Copy(io.Discard, req.Body)
			got.Store(i, n)
			if req.ContentLength != n {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n\"SUCCESS\"\n")
		}
	})
	d := &wire.Dialer{}
	c, a := loadgentest.Open(t, lean.New, api.REST, call.Options{Target: addr, Workers: 1, Dialer: d, Records: 50000}, api.Post)
	defer c.Close()
	for i := range 2 { // the first waits for the server to read; the second reuses the connection
		before := d.Stats()
		if _, err := a.Call(context.Background()); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		sent := d.Stats().Sub(before).Sent
		body, _ := got.Load(i)
		t.Logf("call %d: %d bytes sent, %v of body read by the server", i, sent, body)
		if n, _ := body.(int64); n < 10<<20 || sent < n || sent > n+1024 {
			t.Errorf("call %d: %d bytes sent, server read a body of %v: want over 10 MiB, and its head", i, sent, body)
		}
	}
	if n := d.Stats().Dials; n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}
