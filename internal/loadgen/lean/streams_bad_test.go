package lean_test

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/lean"
	"github.com/meteorbench/meteorbench/internal/loadgen/restcall"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
)

// scripted is a server on loopback that reads each connection's request
// and hands it to handle; closed (and its connections) with the test.
func scripted(t *testing.T, handle func(c net.Conn, br *bufio.Reader, req *http.Request)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	var wg sync.WaitGroup
	t.Cleanup(func() { // the handlers end first, if they will (their checks are the test's)
		ln.Close()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
			return
		case <-time.After(3 * time.Second):
		}
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		<-done
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second))
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				handle(c, br, req)
			})
		}
	})
	return ln.Addr().String()
}

// upgraded answers a WebSocket upgrade with a 101 and accept (the key's
// own when "").
func upgraded(c net.Conn, req *http.Request, accept string) {
	if accept == "" {
		s := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		accept = base64.StdEncoding.EncodeToString(s[:])
	}
	io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "+accept+"\r\n\r\n")
}

// frame is an unmasked server frame.
func frame(b0 byte, p []byte) []byte {
	if len(p) >= 126 {
		return append([]byte{b0, 126, byte(len(p) >> 8), byte(len(p))}, p...)
	}
	return append([]byte{b0, byte(len(p))}, p...)
}

// record is the feed's record i (from 0) as JSON, stamped now.
func record(t *testing.T, i int) []byte {
	ls, err := data.LandingsN(i + 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(data.FeedRecord{Landing: ls[i], SentUnixNano: time.Now().UnixNano()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readFrame reads a client frame: its opcode and unmasked payload.
func readFrame(br *bufio.Reader) (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return 0, nil, err
	}
	n := int(h[1] & 0x7f)
	if n >= 126 {
		return 0, nil, errors.New("long frame")
	}
	if h[1]&0x80 == 0 {
		return 0, nil, errors.New("an unmasked client frame")
	}
	b := make([]byte, 4+n)
	if _, err := io.ReadFull(br, b); err != nil {
		return 0, nil, err
	}
	for i := range n {
		b[4+i] ^= b[i&3]
	}
	return h[0] & 0x0f, b[4:], nil
}

// leanFeed opens the lean REST feed (messages 3) against addr.
func leanFeed(t *testing.T, addr string, settings map[string]string) call.Caller {
	t.Helper()
	c, err := lean.New(api.REST, call.Options{Target: addr, Workers: 1, Dialer: &wire.Dialer{}, Messages: 3, Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	a, err := c.Caller(api.Feed)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// calls makes calls until one fails (at most n) and returns its error
// and class; each must end well within its deadline's reach.
func calls(t *testing.T, a call.Caller, n int, timeout time.Duration) (int, error, results.ErrorClass) {
	t.Helper()
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		start := time.Now()
		_, err := a.Call(ctx)
		cl := call.Classify(ctx, err)
		cancel()
		if took := time.Since(start); took > timeout+2*time.Second {
			t.Errorf("call %d took %v, its deadline %v", i, took, timeout)
		}
		if err != nil {
			return i, err, cl
		}
	}
	return n, nil, ""
}

// TestLeanWebSocketBadServer: a WebSocket server that closes mid-stream,
// closes with an error code, sends a frame that breaks RFC 6455 or a
// handshake that does, or stalls: each a classified error on the call
// it hits, never a hang or a panic; a frame that breaks the protocol is
// answered with a close of 1002 (1009 for one too big), and a fragmented
// message with a ping between its frames is joined and the ping answered.
func TestLeanWebSocketBadServer(t *testing.T) {
	var first atomic.Bool
	first.Store(true)
	for _, tc := range []struct {
		name   string
		script func(t *testing.T, c net.Conn, br *bufio.Reader, req *http.Request)
		ok     int                // calls that succeed first
		class  results.ErrorClass // of the call after them ("": none fails)
		msg    string             // in its error
		close  int                // the close code the client answers with (0: not checked)
		// waitEOF: the server then waits for the client to drop its
		// connection (it gave up).
		waitEOF bool
	}{
		{name: "TCP closed after a record", ok: 1, class: results.ClassTransport, script: func(t *testing.T, c net.Conn, _ *bufio.Reader, req *http.Request) {
			upgraded(c, req, "")
			c.Write(frame(0x81, record(t, 0)))
		}},
		{name: "close 1011", ok: 1, class: results.ClassProtocol, msg: "1011", script: func(t *testing.T, c net.Conn, _ *bufio.Reader, req *http.Request) {
			upgraded(c, req, "")
			c.Write(frame(0x81, record(t, 0)))
			c.Write(frame(0x88, append([]byte{0x03, 0xf3}, "boom"...)))
		}},
		{name: "normal close too early", ok: 1, class: results.ClassInvalid, msg: "1 records, want 3", script: func(t *testing.T, c net.Conn, _ *bufio.Reader, req *http.Request) {
			upgraded(c, req, "")
			c.Write(frame(0x81, record(t, 0)))
			c.Write(frame(0x88, []byte{0x03, 0xe8}))
		}},
		{name: "reserved bits", class: results.ClassProtocol, msg: "reserved", close: 1002, script: func(t *testing.T, c net.Conn, _ *bufio.Reader, req *http.Request) {
			upgraded(c, req, "")
			c.Write(frame(0xc1, record(t, 0)))
		}},
		{name: "masked server frame", class: results.ClassProtocol, msg: "masked", close: 1002, script: func(t *testing.T, c net.Conn, _ *bufio.Reader, req *http.Request) {
			upgraded(c, req, "")
			c.Write([]byte{0x81, 0x81, 1, 2, 3, 4, 'x'})
		}},
		{name: "unknown opcode", class: results.ClassProtocol, msg: "opcode", close: 1002, script: func(t *testing.T, c net.Conn, _ *bufio.Reader, req *http.Request) {
			upgraded(c, req, "")
			c.Write([]byte{0x83, 0})
		}},
		{name: "fragmented ping", class: results.ClassProtocol, msg: "control frame", close: 1002, script: func(t *testing.T, c net.Conn, _ *bufio.Reader, req *http.Request) {
			upgraded(c, req, "")
			c.Write([]byte{0x09, 0})
		}},
		{name: "continuation outside a message", class: results.ClassProtocol, msg: "continuation", close: 1002, script: func(t *testing.T, c net.Conn, _ *bufio.Reader, req *http.Request) {
			upgraded(c, req, "")
			c.Write([]byte{0x80, 0})
		}},
		{name: "message too big", class: results.ClassProtocol, msg: "over 65536", close: 1009, script: func(t *testing.T, c net.Conn, _ *bufio.Reader, req *http.Request) {
			upgraded(c, req, "")
			c.Write([]byte{0x81, 127, 0, 0, 0, 0, 0, 0x10, 0, 0})
		}},
		{name: "fragments too big together", class: results.ClassProtocol, msg: "over 65536", close: 1009, script: func(t *testing.T, c net.Conn, _ *bufio.Reader, req *http.Request) {
			upgraded(c, req, "")
			part := make([]byte, 40000)
			c.Write(frame(0x01, part))
			c.Write(frame(0x80, part))
		}},
		{name: "wrong accept", class: results.ClassProtocol, msg: "Sec-WebSocket-Accept", script: func(t *testing.T, c net.Conn, _ *bufio.Reader, req *http.Request) {
			upgraded(c, req, "AAAAAAAAAAAAAAAAAAAAAAAAAAA=")
		}},
		{name: "refused with 401", class: results.HTTPClass(401), msg: "no token", script: func(t *testing.T, c net.Conn, _ *bufio.Reader, req *http.Request) {
			io.WriteString(c, "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: 21\r\n\r\n{\"error\":\"no token\"}\n")
		}},
		{name: "stalled", class: results.ClassTimeout, waitEOF: true, script: func(t *testing.T, c net.Conn, br *bufio.Reader, req *http.Request) {
			upgraded(c, req, "")
		}},
		{name: "fragments and a ping", ok: 3, script: func(t *testing.T, c net.Conn, br *bufio.Reader, req *http.Request) {
			upgraded(c, req, "")
			if !first.CompareAndSwap(true, false) {
				return // the next stream's
			}
			for i := range 3 {
				r := record(t, i)
				c.Write(frame(0x01, r[:10]))
				c.Write(frame(0x89, []byte("hi")))
				c.Write(frame(0x00, r[10:20]))
				c.Write(frame(0x80, r[20:]))
				if op, p, err := readFrame(br); err != nil || op != 0xa || string(p) != "hi" {
					t.Errorf("after a ping: opcode %#x %q, %v; want a pong \"hi\"", op, p, err)
				}
			}
			c.Write(frame(0x88, []byte{0x03, 0xe8}))
			if op, p, err := readFrame(br); err != nil || op != 0x8 || string(p) != "\x03\xe8" {
				t.Errorf("after the close: opcode %#x %q, %v; want the close 1000 echoed", op, p, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			closed := make(chan int, 1)
			gone := make(chan error, 1)
			addr := scripted(t, func(c net.Conn, br *bufio.Reader, req *http.Request) {
				tc.script(t, c, br, req)
				if tc.waitEOF {
					_, err := br.ReadByte()
					gone <- err
				}
				if tc.close == 0 {
					return
				}
				op, p, err := readFrame(br)
				if err != nil || op != 0x8 || len(p) < 2 {
					t.Errorf("after the bad frame: opcode %#x %q, %v; want a close", op, p, err)
					closed <- 0
					return
				}
				closed <- int(p[0])<<8 | int(p[1])
			})
			a := leanFeed(t, addr, nil)
			timeout := 5 * time.Second
			if tc.class == results.ClassTimeout {
				timeout = 200 * time.Millisecond
			}
			n, err, cl := calls(t, a, tc.ok+1, timeout)
			want := tc.ok
			if tc.class == "" {
				want = tc.ok + 1
				if n == tc.ok { // the next stream: the script's server answers it as the first
					n, err, cl = tc.ok+1, nil, ""
				}
			}
			t.Logf("%d calls, then %v", n, err)
			if n != want || cl != tc.class || (tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg))) {
				t.Fatalf("%d calls succeeded, then class %q: %v; want %d, then %q with %q", n, cl, err, tc.ok, tc.class, tc.msg)
			}
			if tc.waitEOF {
				select {
				case err := <-gone:
					if err != io.EOF {
						t.Errorf("the server read %v, want EOF (the client dropped its connection)", err)
					}
				case <-time.After(5 * time.Second):
					t.Error("the client that gave up kept its connection open")
				}
			}
			if tc.close != 0 {
				select {
				case code := <-closed:
					if code != tc.close {
						t.Errorf("the client closed with %d, want %d", code, tc.close)
					}
				case <-time.After(5 * time.Second):
					t.Error("no close from the client")
				}
			}
		})
	}
}

// TestLeanStreamsCancel: a feed call waiting on a stalled server ends
// promptly when its context is cancelled, classified cancelled.
func TestLeanStreamsCancel(t *testing.T) {
	gone := make(chan error, 1)
	addr := scripted(t, func(c net.Conn, br *bufio.Reader, req *http.Request) {
		upgraded(c, req, "")
		_, err := br.ReadByte()
		gone <- err
	})
	a := leanFeed(t, addr, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := a.Call(ctx)
	if cl := call.Classify(ctx, err); cl != results.ClassCancelled || time.Since(start) > 3*time.Second {
		t.Fatalf("class %q after %v: %v; want cancelled, promptly", cl, time.Since(start), err)
	}
	select {
	case err := <-gone:
		if err != io.EOF {
			t.Errorf("server read %v, want EOF (the connection dropped)", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the cancelled call's connection is still open")
	}
}

// TestLeanSSEBadServer: an event stream cut inside an event, or one
// with an endless line, or of the wrong media type: a classified error,
// never a hang.
func TestLeanSSEBadServer(t *testing.T) {
	sse := map[string]string{restcall.SettingFeedTransport: restcall.FeedSSE}
	const head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
	chunk := func(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }
	for _, tc := range []struct {
		name  string
		body  func(t *testing.T) string
		ok    int
		class results.ErrorClass
		msg   string
	}{
		{"a whole feed", func(t *testing.T) string {
			return head + chunk("data: "+string(record(t, 0))+"\n\n") + chunk("data: "+string(record(t, 1))+"\n\n") + chunk("data: "+string(record(t, 2))+"\n\n") + "0\r\n\r\n"
		}, 3, "", ""},
		{"cut inside an event", func(t *testing.T) string {
			return head + chunk("data: "+string(record(t, 0))+"\n\n") + chunk("data: {\"id\":")
		}, 1, results.ClassTransport, "unexpected EOF"},
		{"ended inside an event", func(t *testing.T) string {
			return head + chunk("data: "+string(record(t, 0))+"\n\n") + chunk("data: {\"id\":") + "0\r\n\r\n"
		}, 1, results.ClassTransport, "inside an event"},
		{"an endless line", func(t *testing.T) string {
			return head + chunk(strings.Repeat("x", 70000))
		}, 0, results.ClassProtocol, "event line"},
		{"bad chunk size", func(t *testing.T) string { return head + "zz\r\n" }, 0, results.ClassProtocol, "chunk size"},
		{"wrong media type", func(t *testing.T) string {
			return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
		}, 0, results.ClassInvalid, "content type"},
		{"ended too early", func(t *testing.T) string {
			return head + chunk("data: "+string(record(t, 0))+"\n\n") + "0\r\n\r\n"
		}, 1, results.ClassInvalid, "1 records, want 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := scripted(t, func(c net.Conn, br *bufio.Reader, req *http.Request) {
				if req.Header.Get("Accept") != api.TypeEventStream {
					t.Errorf("Accept %q", req.Header.Get("Accept"))
				}
				io.WriteString(c, tc.body(t))
			})
			a := leanFeed(t, addr, sse)
			n, err, cl := calls(t, a, tc.ok+1, 5*time.Second)
			if tc.class == "" && n == tc.ok {
				n, err, cl = tc.ok+1, nil, "" // the call after is the next stream's
			}
			t.Logf("%d calls, then %v", n, err)
			want := tc.ok
			if tc.class == "" {
				want++
			}
			if n != want || cl != tc.class || (tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg))) {
				t.Fatalf("%d calls succeeded, then class %q: %v; want %d, then %q with %q", n, cl, err, tc.ok, tc.class, tc.msg)
			}
		})
	}
}

// TestLeanUploadRefused: an upload the server refuses before its end (a
// 400 after the head, the connection closed after it, as net/http's
// server does: its side shut, what the client still sends read and
// dropped) is that status on a call of the stream, never a hang, and the
// next stream starts anew.
func TestLeanUploadRefused(t *testing.T) {
	addr := scripted(t, func(c net.Conn, br *bufio.Reader, req *http.Request) {
		io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: 20\r\n\r\n{\"error\":\"bad one\"}\n")
		c.(*net.TCPConn).CloseWrite()
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		io.Copy(io.Discard, br)
	})
	c, err := lean.New(api.REST, call.Options{Target: addr, Workers: 1, Dialer: &wire.Dialer{}, Messages: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, err := c.Caller(api.Upload)
	if err != nil {
		t.Fatal(err)
	}
	for stream := range 2 {
		n, err, cl := calls(t, a, 50, 5*time.Second)
		t.Logf("stream %d: %d calls, then %v", stream, n, err)
		if cl != results.HTTPClass(400) || !strings.Contains(err.Error(), "bad one") {
			t.Fatalf("stream %d: class %q: %v; want %s with the server's detail", stream, cl, err, results.HTTPClass(400))
		}
	}
}
