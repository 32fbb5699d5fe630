package lean_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/lean"
	"github.com/meteorbench/meteorbench/internal/loadgen/loadgentest"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/tcptest"
)

// A connection whose stream IDs run out is retired before the last one
// (2^31-1) is passed: the calls go on, over a new connection, and none
// fails.
func TestStreamIDsRetired(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	d := &wire.Dialer{}
	c, a := loadgentest.Open(t, lean.New, api.GRPC, call.Options{Target: addr, Workers: 1, Dialer: d}, api.Small)
	defer c.Close()
	calls := func(n int) {
		for i := range n {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := a.Call(ctx)
			cancel()
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
	}
	calls(1)
	lean.RetireIn(c, 3)
	calls(10)
	if got := d.Stats().Dials; got != 2 {
		t.Errorf("%d connections dialled, want 2: the first retired after its last stream ID", got)
	}
}

// A server that grants every window and then reads nothing: the client's
// writes stall once the socket's buffers are full. Every call still ends
// by its deadline (plus the watchdog's period and a loaded machine's
// slack), as a timeout, or as a transport error for the calls on the
// connection the stalled write closed.
func TestStalledPeerBoundsWrites(t *testing.T) {
	var stall sync.WaitGroup
	stall.Add(1)
	addr := tcptest.Start(t, func(c net.Conn) {
		fr := http2.NewFramer(c, nil)
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
		fr.WriteWindowUpdate(0, 1<<31-1-65535)
		stall.Wait() // reads nothing until the test ends
	})
	t.Cleanup(stall.Done)
	c, err := lean.New(api.GRPC, call.Options{Target: addr, Workers: 8, Dialer: &wire.Dialer{}, Records: 10000})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const timeout = 300 * time.Millisecond
	var wg sync.WaitGroup
	for w := range 8 {
		a, err := c.Caller(api.Post) // about 1 MB a request
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for i := range 3 {
				start := time.Now()
				_, err := a.(call.DeadlineCaller).CallBy(context.Background(), start.Add(timeout))
				took := time.Since(start)
				cl := call.Classify(context.Background(), err)
				t.Logf("caller %d, call %d: %s after %v (%v)", w, i, cl, took.Round(time.Millisecond), err)
				if took > timeout+lean.WatchEvery+time.Second {
					t.Errorf("caller %d, call %d: ended %v after it began (%v), past its deadline of %v", w, i, took, err, timeout)
				}
				if cl != results.ClassTimeout && cl != results.ClassTransport {
					t.Errorf("caller %d, call %d: class %q (%v), want timeout or transport", w, i, cl, err)
				}
			}
		})
	}
	wg.Wait()
}

// The lean HTTP/1.1 client against answers whose framing never ends or
// is absurd: each call ends with a clear error of its class, in time.
func TestHTTP1Bounds(t *testing.T) {
	// The calls' deadline: the server that stalls is waited for that long;
	// the one that sends 20 MiB of headers must get 10 MiB written before
	// it, which under the race detector beside other tests took longer
	// than 500 ms (the call then ended on its deadline, not on the bound).
	const timeout, headerTimeout = 500 * time.Millisecond, 5 * time.Second
	for _, tc := range []struct {
		name    string
		serve   func(w io.Writer)
		class   results.ErrorClass
		msg     string
		timeout time.Duration
	}{
		{"header block without end", func(w io.Writer) {
			io.WriteString(w, "HTTP/1.1 200 OK\r\n")
			line := "X-Pad: " + strings.Repeat("p", 1000) + "\r\n"
			for range 20 << 10 { // 20 MiB of headers, past the 10 MiB bound
				if _, err := io.WriteString(w, line); err != nil {
					return
				}
			}
		}, results.ClassProtocol, "header block over", headerTimeout},
		{"absurd Content-Length", func(w io.Writer) {
			io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000000000000000\r\n\r\n")
		}, results.ClassProtocol, "Content-Length 100000000000000000", timeout},
		{"body never finished", func(w io.Writer) {
			io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n\"API")
		}, results.ClassTimeout, "", timeout},
		{"chunk never finished", func(w io.Writer) {
			io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nffff\r\nabc")
		}, results.ClassTimeout, "", timeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := tcptest.Start(t, func(c net.Conn) {
				br := bufio.NewReader(c)
				for { // the request's head
					l, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if l == "\r\n" {
						break
					}
				}
				tc.serve(c)
				io.Copy(io.Discard, c) // until the client hangs up
			})
			c, a := loadgentest.Open(t, lean.New, api.REST, call.Options{Target: addr, Workers: 1, Dialer: &wire.Dialer{}}, api.Small)
			defer c.Close()
			start := time.Now()
			_, err := a.(call.DeadlineCaller).CallBy(context.Background(), start.Add(tc.timeout))
			took := time.Since(start)
			t.Logf("%v after %v", err, took)
			if cl := call.Classify(context.Background(), err); cl != tc.class {
				t.Errorf("class %q (%v), want %s", cl, err, tc.class)
			}
			if tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)) {
				t.Errorf("error %v, want one naming %q", err, tc.msg)
			}
			if took > tc.timeout+lean.WatchEvery+time.Second {
				t.Errorf("the call ended %v after it began: past its deadline", took)
			}
			var ce *call.Error
			if tc.class == results.ClassProtocol && !errors.As(err, &ce) {
				t.Errorf("%v is not a classified error", err)
			}
		})
	}
}

// A server that grants no send window: a call waiting for window ends at
// its deadline, as a timeout, and the connection stays (a wait for window
// is the peer's right, not a stall of the writer).
func TestZeroWindowEndsByDeadline(t *testing.T) {
	addr := tcptest.Start(t, func(c net.Conn) {
		fr := http2.NewFramer(c, nil)
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
		io.Copy(io.Discard, c)
	})
	d := &wire.Dialer{}
	c, a := loadgentest.Open(t, lean.New, api.GRPC, call.Options{Target: addr, Workers: 1, Dialer: d}, api.Post)
	defer c.Close()
	const timeout = 300 * time.Millisecond
	for i := range 3 {
		start := time.Now()
		_, err := a.(call.DeadlineCaller).CallBy(context.Background(), start.Add(timeout))
		took := time.Since(start)
		if cl := call.Classify(context.Background(), err); cl != results.ClassTimeout {
			t.Errorf("call %d: class %q (%v), want timeout", i, cl, err)
		}
		if took > timeout+lean.WatchEvery+time.Second {
			t.Errorf("call %d ended %v after it began, past its deadline", i, took)
		}
	}
	if n := d.Stats().Dials; n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}
