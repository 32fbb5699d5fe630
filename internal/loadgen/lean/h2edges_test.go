package lean_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/lean"
	"github.com/meteorbench/meteorbench/internal/loadgen/loadgentest"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/tcptest"
	"github.com/meteorbench/meteorbench/internal/tlsutil"
)

// callBy makes one call on a that must end by timeout.
func callBy(a call.Caller, timeout time.Duration) (results.ErrorClass, error, time.Duration) {
	start := time.Now()
	_, err := a.(call.DeadlineCaller).CallBy(context.Background(), start.Add(timeout))
	return call.Classify(context.Background(), err), err, time.Since(start)
}

// A server that stalls between a stream's HEADERS and the CONTINUATION
// that ends its header block, past the call's deadline, and ends the block
// once the next call on the same caller (the same stream struct, reused)
// has started: the late header fields belong to the stream given up, not
// to the next call, which gets its own answer. (The reader once kept the
// abandoned stream as the one being decoded: the next call was told it was
// done, with an empty answer, and the race detector saw the reader write
// to the stream the caller was resetting.)
func TestContinuationStallNextCall(t *testing.T) {
	srv := loadgentest.StartHostile(t, loadgentest.StallContinuation, 1)
	d := &wire.Dialer{}
	c, a := loadgentest.Open(t, lean.New, api.GRPC, call.Options{Target: srv.Addr, Workers: 1, Dialer: d}, api.Small)
	defer c.Close()
	steps := []struct {
		what    string
		timeout time.Duration
		want    results.ErrorClass
	}{
		{"a good call", 5 * time.Second, ""},
		{"the stalled call", 200 * time.Millisecond, results.ClassTimeout},
		{"the next call, while the stalled block ends", 5 * time.Second, ""},
		{"the stalled call again", 200 * time.Millisecond, results.ClassTimeout},
		{"the next call again", 5 * time.Second, ""},
	}
	for i, st := range steps {
		cl, err, took := callBy(a, st.timeout)
		t.Logf("call %d, %s: class %q after %v (%v)", i, st.what, cl, took.Round(time.Millisecond), err)
		if cl != st.want {
			t.Errorf("call %d, %s: class %q (%v), want %q", i, st.what, cl, err, st.want)
		}
	}
	if n := d.Stats().Dials; n != 1 {
		t.Errorf("%d connections, want 1: a stream given up on does not end the connection", n)
	}
}

// A server that stops reading and sends PINGs: the acknowledgements the
// client owes pile up unwritten. The reader never writes, so it goes on
// reading; the connection is given up (too many frames owed, or their
// write past its deadline) and the next call does not wait its whole
// timeout on it: it is made on a new connection. (The reader once wrote
// the acknowledgements itself, with no deadline: blocked in that write,
// it read nothing more, the connection still looked usable, and the next
// call waited for the write lock until its deadline.)
func TestStopReadingRetiresConnection(t *testing.T) {
	srv := loadgentest.StartHostile(t, loadgentest.StopReading, 1)
	// A small send buffer on the client's side, so that a few thousand
	// acknowledgements fill it, not megabytes of them.
	d := &wire.Dialer{Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			nc.(*net.TCPConn).SetWriteBuffer(4 << 10)
		}
		return nc, err
	}}
	c, a := loadgentest.Open(t, lean.New, api.GRPC, call.Options{Target: srv.Addr, Workers: 1, Dialer: d}, api.Small)
	defer c.Close()
	if cl, err, _ := callBy(a, 5*time.Second); cl != "" {
		t.Fatalf("the first call: class %q (%v), want a success", cl, err)
	}
	cl, err, took := callBy(a, 300*time.Millisecond) // the server stops reading
	t.Logf("the call that stopped the server reading: class %q after %v (%v)", cl, took.Round(time.Millisecond), err)
	// The next call's timeout is long: it must not be what ends it. It
	// fails fast (the connection ended while it waited to write) or is
	// made on a new connection, where the server answers it.
	const timeout = 10 * time.Second
	cl, err, took = callBy(a, timeout)
	t.Logf("the next call: class %q after %v (%v)", cl, took.Round(time.Millisecond), err)
	if limit := lean.ControlWriteTimeout + 2*time.Second; took > limit || cl == results.ClassTimeout {
		t.Errorf("the next call: class %q after %v (%v), over %v: it waited on the connection that stopped being read", cl, took, err, limit)
	}
	if cl != "" {
		cl, err, _ = callBy(a, 5*time.Second)
		t.Logf("the call after: class %q (%v)", cl, err)
	}
	if cl != "" {
		t.Errorf("no call succeeded on a new connection: class %q (%v)", cl, err)
	}
	if n := d.Stats().Dials; n != 2 {
		t.Errorf("%d connections, want 2: the one the server stopped reading, then a new one", n)
	}
}

// SETTINGS_ENABLE_PUSH 1 from a server is a connection error of type
// PROTOCOL_ERROR (RFC 9113 6.5.2); the client said ENABLE_PUSH 0.
func TestServerEnablePush(t *testing.T) {
	srv := loadgentest.StartHostile(t, loadgentest.PushEnabled, 1)
	c, a := loadgentest.Open(t, lean.New, api.GRPC, call.Options{Target: srv.Addr, Workers: 1, Dialer: &wire.Dialer{}}, api.Small)
	defer c.Close()
	if cl, err, _ := callBy(a, 5*time.Second); cl != "" {
		t.Fatalf("the first call: class %q (%v), want a success", cl, err)
	}
	cl, err, took := callBy(a, 5*time.Second)
	t.Logf("class %q after %v (%v)", cl, took.Round(time.Millisecond), err)
	if cl != results.ClassProtocol || !strings.Contains(err.Error(), "ENABLE_PUSH") {
		t.Errorf("class %q (%v), want a protocol error naming ENABLE_PUSH", cl, err)
	}
}

// A 64 KiB header field through a peer's 16 KiB SETTINGS_MAX_FRAME_SIZE
// (grpc-go's server): the header block goes as HEADERS and CONTINUATION
// frames, none over the peer's maximum, and the server checks the token
// it carries. (One HEADERS frame of 64 KiB once broke the connection
// with FRAME_SIZE_ERROR.)
func TestLargeHeaderBlockSplit(t *testing.T) {
	token := strings.Repeat("t", 64<<10)
	addr := servertest.Start(t, server.Config{Token: token, MaxHeaderBytes: 1 << 20})
	out := &frameTally{bytes: map[http2.FrameType]int{}, skip: len(http2.ClientPreface)}
	in := &frameTally{bytes: map[http2.FrameType]int{}}
	d := &wire.Dialer{Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &tapConn{Conn: nc, in: in, out: out}, nil
	}}
	c, a := loadgentest.Open(t, lean.New, api.GRPC, call.Options{Target: addr, Workers: 1, Dialer: d, Token: token}, api.Small)
	defer c.Close()
	for i := range 3 {
		if cl, err, _ := callBy(a, 5*time.Second); cl != "" {
			t.Fatalf("call %d: class %q (%v), want a success", i, cl, err)
		}
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.bytes[http2.FrameContinuation] < 48<<10 {
		t.Errorf("%d bytes of CONTINUATION frames sent, want the 64 KiB header block's rest past its HEADERS", out.bytes[http2.FrameContinuation])
	}
}

// h2peer serves one scripted HTTP/2 connection at a time on 127.0.0.1
// (over TLS when tc is set): after the client's preface, script has the
// connection's Framer (raw header blocks: no hpack of its own).
func h2peer(t *testing.T, tc *tls.Config, script func(nc net.Conn, fr *http2.Framer)) string {
	return tcptest.Start(t, func(nc net.Conn) {
		if tc != nil {
			nc = tls.Server(nc, tc)
		}
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(nc, preface); err != nil || string(preface) != http2.ClientPreface {
			return
		}
		script(nc, http2.NewFramer(nc, nc))
	})
}

// readHeaders reads frames up to the next HEADERS, answering the client's
// SETTINGS; it returns the HEADERS' stream and its block (one frame).
func readHeaders(fr *http2.Framer, settingsAck func()) (uint32, []byte, bool) {
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return 0, nil, false
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				if settingsAck != nil {
					settingsAck()
				}
			} else {
				fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			return f.StreamID, bytes.Clone(f.HeaderBlockFragment()), true
		}
	}
}

// Over TLS the client's :scheme is https (RFC 9113 8.3.1: the scheme of
// the target URI); it once said http whatever the dialer did.
func TestSchemeOverTLS(t *testing.T) {
	cert, certPEM, err := tlsutil.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	schemes := make(chan string, 4)
	addr := h2peer(t, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}}, func(_ net.Conn, fr *http2.Framer) {
		fr.WriteSettings()
		_, block, ok := readHeaders(fr, nil)
		if !ok {
			return
		}
		fields, err := hpack.NewDecoder(4096, nil).DecodeFull(block)
		if err != nil {
			schemes <- "undecodable: " + err.Error()
			return
		}
		for _, f := range fields {
			if f.Name == ":scheme" {
				schemes <- f.Value
				return
			}
		}
		schemes <- "none"
	})
	d := &wire.Dialer{TLS: &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}}}
	c, a := loadgentest.Open(t, lean.New, api.GRPC, call.Options{Target: addr, Workers: 1, Dialer: d}, api.Small)
	defer c.Close()
	callBy(a, 2*time.Second) // the peer answers nothing: what it read is the test
	select {
	case s := <-schemes:
		if s != "https" {
			t.Errorf(":scheme %q over TLS, want https", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the peer read no HEADERS")
	}
}

// A peer's SETTINGS_HEADER_TABLE_SIZE is the most the client's encoder
// may use: after the client acknowledged 0, its next header block starts
// with a dynamic table size update to 0 (RFC 7541 4.2) and indexes
// nothing. (The client once kept its 4096-byte table, references into
// which a peer with none cannot decode.)
func TestPeerHeaderTableSize(t *testing.T) {
	got := make(chan string, 1)
	addr := h2peer(t, nil, func(_ net.Conn, fr *http2.Framer) {
		fr.WriteSettings(http2.Setting{ID: http2.SettingHeaderTableSize, Val: 0})
		acked, updated := false, false
		dec := hpack.NewDecoder(4096, nil) // as the client's encoder starts
		for {
			id, block, ok := readHeaders(fr, func() { acked = true })
			if !ok {
				return
			}
			if _, err := dec.DecodeFull(block); err != nil {
				got <- "undecodable block: " + err.Error()
				return
			}
			if len(block) > 0 && block[0] == 0x20 { // 001 00000: size update to 0
				updated = true
			}
			if acked {
				if updated {
					got <- "ok"
				} else {
					got <- fmt.Sprintf("no dynamic table size update to 0 by the first block after the ACK (it starts %x)", block[:min(len(block), 4)])
				}
				return
			}
			// Before the ACK: answer, so that the client makes another call.
			var hb bytes.Buffer
			enc := hpack.NewEncoder(&hb)
			enc.SetMaxDynamicTableSizeLimit(0)
			for _, f := range []hpack.HeaderField{{Name: ":status", Value: "200"}, {Name: "content-type", Value: "application/grpc"}, {Name: "grpc-status", Value: "0"}} {
				enc.WriteField(f)
			}
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true, EndStream: true, BlockFragment: hb.Bytes()})
		}
	})
	c, a := loadgentest.Open(t, lean.New, api.GRPC, call.Options{Target: addr, Workers: 1, Dialer: &wire.Dialer{}}, api.Small)
	defer c.Close()
	for range 3 {
		callBy(a, time.Second) // the answers are trailers only: invalid, and no matter
		select {
		case s := <-got:
			if s != "ok" {
				t.Error(s)
			}
			return
		default:
		}
	}
	select {
	case s := <-got:
		if s != "ok" {
			t.Error(s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the peer saw no header block after the client acknowledged its SETTINGS")
	}
}

// The peer's MAX_FRAME_SIZE and INITIAL_WINDOW_SIZE apply to the frames
// written after the client's ACK of its SETTINGS, never before: a peer can
// rely on its settings only once acknowledged, and grpcio (C-core) holds
// the client to that (a 34,343 B DATA frame ahead of the ACK of its 4 MiB
// MAX_FRAME_SIZE: RST_STREAM PROTOCOL_ERROR, "Failed parsing HTTP/2"). A
// post's 100 KB message, to a peer whose SETTINGS raise both, at once.
func TestSettingsApplyAfterTheirAck(t *testing.T) {
	type seen struct {
		largest, beforeAck int // the largest DATA frame before the ACK, the stream's bytes before it
		acked, ended       bool
	}
	got := make(chan seen, 4)
	addr := h2peer(t, nil, func(nc net.Conn, fr *http2.Framer) {
		defer nc.Close()
		fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 4 << 20}, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 4 << 20})
		fr.WriteWindowUpdate(0, 4<<20)
		var s seen
		defer func() { got <- s }()
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		for !s.ended {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if f.IsAck() {
					s.acked = true
				} else {
					fr.WriteSettingsAck()
				}
			case *http2.DataFrame:
				if !s.acked {
					s.largest = max(s.largest, int(f.Length))
					s.beforeAck += int(f.Length)
				}
				s.ended = f.StreamEnded()
			}
		}
	})
	c, a := loadgentest.Open(t, lean.New, api.GRPC, call.Options{Target: addr, Workers: 1, Dialer: &wire.Dialer{}}, api.Post)
	defer c.Close()
	callBy(a, 3*time.Second) // the peer never answers: only what it read counts
	select {
	case s := <-got:
		t.Logf("before the client's SETTINGS ACK: largest DATA frame %d B, %d B of the stream; ACK seen %v, message whole %v", s.largest, s.beforeAck, s.acked, s.ended)
		if !s.acked || !s.ended {
			t.Fatalf("the peer saw the ACK %v and the whole message %v, want both", s.acked, s.ended)
		}
		if s.largest > 16384 || s.beforeAck > 65535 {
			t.Errorf("before the ACK: a DATA frame of %d B (max 16384) and %d B of the stream (window 65535): the new settings were used before they were acknowledged", s.largest, s.beforeAck)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the peer's script never ended")
	}
}
