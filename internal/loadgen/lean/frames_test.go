package lean_test

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"testing"

	"golang.org/x/net/http2"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/lean"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// frameTally counts the bytes of each HTTP/2 frame type one way.
type frameTally struct {
	mu      sync.Mutex
	pending []byte
	skip    int // the client preface, on the sending side
	bytes   map[http2.FrameType]int
}

func (f *frameTally) add(p []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = append(f.pending, p...)
	if n := min(f.skip, len(f.pending)); n > 0 {
		f.pending, f.skip = f.pending[n:], f.skip-n
	}
	for len(f.pending) >= 9 {
		n := int(binary.BigEndian.Uint32(append([]byte{0}, f.pending[:3]...)))
		if len(f.pending) < 9+n {
			return
		}
		f.bytes[http2.FrameType(f.pending[3])] += 9 + n
		f.pending = f.pending[9+n:]
	}
}

type tapConn struct {
	net.Conn
	in, out *frameTally
}

func (c *tapConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.add(p[:n])
	return n, err
}

func (c *tapConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.out.add(p[:n])
	return n, err
}

// TestGRPCFrames compares the engines' small gRPC calls frame type by
// frame type, both ways. grpc-go's client pings to estimate the
// bandwidth-delay product whenever data arrives and no such ping is out,
// granting the connection's window back first; the lean engine sends the
// same frames (its window is fixed, but the server's work answering them
// is part of what a gRPC call costs it). Both send the time left to the
// deadline as grpc-timeout, a literal whenever its value is new; grpc-go
// adds grpc-accept-encoding (gzip is registered in this process), one
// byte once indexed. Measured here (bytes per call, lean / standard): sent
// HEADERS 17.7 / 19.4, DATA 14 / 14, PING 34 / 34, WINDOW_UPDATE 13.1 /
// 13; received the same both ways. Every frame type must agree within 2%
// but sent HEADERS, within a grpc-timeout literal (8 B): how often a
// client's timeout value is new (a literal, not an index) depends on how
// long it takes from the deadline to the encoding (19.0 / 23.1 under the
// race detector at load 7).
func TestGRPCFrames(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	const n = 200
	got := map[string][2]*frameTally{}
	for name, open := range map[string]func(api.Protocol, call.Options) (call.Client, error){"lean": lean.New, "standard": standard} {
		in := &frameTally{bytes: map[http2.FrameType]int{}}
		out := &frameTally{bytes: map[http2.FrameType]int{}, skip: len(http2.ClientPreface)}
		d := &wire.Dialer{Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			return &tapConn{Conn: c, in: in, out: out}, err
		}}
		c, err := open(api.GRPC, call.Options{Target: addr, Workers: 1, Dialer: d})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := c.Caller(api.Small)
		for range n {
			ctx, cancel := context.WithTimeout(context.Background(), 5e9)
			if _, err := a.Call(ctx); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
		c.Close()
		got[name] = [2]*frameTally{out, in}
		for _, tt := range []struct {
			way string
			f   *frameTally
		}{{"sent", out}, {"received", in}} {
			for ft, b := range tt.f.bytes {
				t.Logf("%s %s %v: %.1f B per call", name, tt.way, ft, float64(b)/n)
			}
		}
	}
	for way, wname := range []string{"sent", "received"} {
		l, st := got["lean"][way].bytes, got["standard"][way].bytes
		for _, ft := range []http2.FrameType{http2.FrameHeaders, http2.FrameData, http2.FrameSettings, http2.FramePing, http2.FrameWindowUpdate} {
			lb, sb := float64(l[ft])/n, float64(st[ft])/n
			switch {
			case ft == http2.FrameHeaders && way == 0:
				if d := sb - lb; d < -8 || d > 8 {
					t.Errorf("sent HEADERS: lean %.1f B per call, standard %.1f: more than a grpc-timeout literal apart", lb, sb)
				}
			case lb > 1.02*sb+0.5 || lb < 0.98*sb-0.5:
				t.Errorf("%s %v: lean %.1f B per call, standard %.1f", wname, ft, lb, sb)
			}
		}
	}
}
