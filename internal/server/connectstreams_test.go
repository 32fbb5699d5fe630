package server_test

// The stream methods over gRPC-Web and Connect (connectstreams.go), over
// real sockets against the real server, with connect-go's client.

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/testmode"
	"github.com/meteorbench/meteorbench/internal/timing"
)

// webHTTP is an HTTP client of HTTP/1.1 or (h2 true) HTTP/2 without TLS.
func webHTTP(t testing.TB, h2 bool, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	var p http.Protocols
	if h2 {
		p.SetUnencryptedHTTP2(true)
	} else {
		p.SetHTTP1(true)
	}
	tr := &http.Transport{Proxy: nil, Protocols: &p, DisableCompression: true, DialContext: dial, TLSClientConfig: &tls.Config{}}
	if dial != nil {
		// A slow reader's client: HTTP/2 reads ahead of the application
		// only as far as a small window (Go's default is 4 MiB a stream).
		tr.HTTP2 = &http.HTTP2Config{MaxReceiveBufferPerStream: 64 << 10, MaxReceiveBufferPerConnection: 64 << 10}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// webOpts are connect-go's options for gRPC-Web (web true) or Connect.
func webOpts(web bool) []connect.ClientOption {
	opts := []connect.ClientOption{connect.WithAcceptCompression("gzip", nil, nil)}
	if web {
		opts = append(opts, connect.WithGRPCWeb())
	}
	return opts
}

func webURL(c *client, method string) string { return "http://" + c.addr + method }

func authed[T any](c *client, m *T) *connect.Request[T] {
	r := connect.NewRequest(m)
	r.Header().Set("Authorization", "Bearer "+c.token)
	return r
}

// TestWebStreams: Feed over gRPC-Web and Connect on HTTP/1.1 and HTTP/2
// pushes the records asked for at the rate asked for, stamped; Connect's
// UploadStream answers SUCCESS (HTTP/1.1 and HTTP/2) and its Chat echoes
// each message (HTTP/2); what the protocols do not carry is refused
// saying so: gRPC-Web's client and bidi streams UNIMPLEMENTED, Connect's
// bidi stream on HTTP/1.1 by connect-go.
func TestWebStreams(t *testing.T) {
	c := startClient(t, server.Config{Token: "tok"})
	ctx := c.ctx(t)
	for _, h2 := range []bool{false, true} {
		hc := webHTTP(t, h2, nil)
		for _, web := range []bool{false, true} {
			name := map[bool]string{false: "connect", true: "grpc-web"}[web] + map[bool]string{false: "/http1.1", true: "/http2"}[h2]
			t.Run(name, func(t *testing.T) {
				opts := webOpts(web)
				fc := connect.NewClient[pb.FeedRequest, pb.MeteoriteLanding](hc, webURL(c, pb.MeteoriteLandingsService_Feed_FullMethodName), opts...)
				before := time.Now()
				fs, err := fc.CallServerStream(ctx, authed(c, &pb.FeedRequest{Messages: 5, Rate: 50}))
				if err != nil {
					t.Fatal(err)
				}
				var ids []uint32
				var stamps []int64
				for fs.Receive() {
					ids, stamps = append(ids, fs.Msg().GetId()), append(stamps, fs.Msg().GetSentUnixNano())
				}
				if err := fs.Err(); err != nil || len(ids) != 5 {
					t.Fatalf("Feed: %d records, %v; want 5", len(ids), err)
				}
				fs.Close()
				checkStamps(t, "Feed", ids, stamps, before, time.Now())
				if span := time.Duration(stamps[4] - stamps[0]); span < 80*time.Millisecond {
					t.Errorf("Feed at 50/s: 5 records stamped %v apart, want at least 80 ms", span)
				}

				uc := connect.NewClient[pb.MeteoriteLanding, pb.StatusResponse](hc, webURL(c, pb.MeteoriteLandingsService_UploadStream_FullMethodName), opts...)
				us := uc.CallClientStream(ctx)
				us.RequestHeader().Set("Authorization", "Bearer "+c.token)
				for _, l := range data.MustLandings()[:5] {
					if err := us.Send(l.Proto()); err != nil {
						break // the answer says why
					}
				}
				res, err := us.CloseAndReceive()
				switch {
				case web:
					if connect.CodeOf(err) != connect.CodeUnimplemented || !strings.Contains(err.Error(), "gRPC-Web does not carry") {
						t.Errorf("UploadStream over gRPC-Web: %v, want UNIMPLEMENTED saying why", err)
					}
				case err != nil || res.Msg.GetStatus() != data.Success:
					t.Errorf("UploadStream: %v; want SUCCESS", err)
				}

				cc := connect.NewClient[pb.ChatMessage, pb.ChatMessage](hc, webURL(c, pb.MeteoriteLandingsService_Chat_FullMethodName), opts...)
				cs := cc.CallBidiStream(ctx)
				cs.RequestHeader().Set("Authorization", "Bearer "+c.token)
				for i := range uint64(3) {
					sent := time.Now().UnixNano()
					err := cs.Send(&pb.ChatMessage{Seq: i, SentUnixNano: sent, Text: "hello"})
					var got *pb.ChatMessage
					if err == nil || errors.Is(err, io.EOF) {
						got, err = cs.Receive()
					}
					switch {
					case web:
						// On HTTP/1.1 connect-go's client refuses the
						// answer itself, for its HTTP version, also
						// UNIMPLEMENTED.
						if connect.CodeOf(err) != connect.CodeUnimplemented || (h2 && !strings.Contains(err.Error(), "gRPC-Web does not carry")) {
							t.Errorf("Chat over gRPC-Web: %v, want UNIMPLEMENTED saying why", err)
						}
					case !h2:
						if err == nil || !strings.Contains(err.Error(), "505") {
							t.Errorf("Chat over Connect on HTTP/1.1: %v, want 505 (HTTP Version Not Supported)", err)
						}
					case err != nil || got.GetSeq() != i || got.GetSentUnixNano() != sent || got.GetText() != "hello":
						t.Fatalf("Chat answer %d: %v, %v; want seq %d, sent %d, hello", i, got, err, i, sent)
					default:
						continue
					}
					break
				}
				_ = cs.CloseRequest()
				if !web && h2 {
					if _, err := cs.Receive(); !errors.Is(err, io.EOF) {
						t.Errorf("Chat after CloseRequest: %v, want EOF", err)
					}
				}
				_ = cs.CloseResponse()
			})
		}
	}
}

// envelope is a Connect or gRPC-Web streaming message: flag, length, body.
func envelope(flag byte, msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	b[0] = flag
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// TestWebStreamsBadInput: a Connect stream whose message is not protobuf,
// a feed asking for too many records, a chat message over the limit and a
// stream without the token each get an error status, and the server goes
// on serving (a feed right after each is whole).
func TestWebStreamsBadInput(t *testing.T) {
	c := startClient(t, server.Config{Token: "tok"})
	ctx := c.ctx(t)
	// curl's view: a raw POST of a Connect server stream whose message
	// does not parse gets an end-of-stream error, invalid_argument.
	resp, body := c.do(t, http.MethodPost, pb.MeteoriteLandingsService_Feed_FullMethodName, envelope(0, []byte{0xff, 0xff, 0xff}),
		"Content-Type", api.TypeConnectStreamProto)
	if resp.StatusCode != http.StatusOK || len(body) < 5 || body[0]&2 == 0 || !bytes.Contains(body, []byte("invalid_argument")) {
		t.Errorf("malformed Connect feed request: %d %q, want an end-of-stream invalid_argument", resp.StatusCode, body)
	}
	hc := webHTTP(t, true, nil)
	fc := connect.NewClient[pb.FeedRequest, pb.MeteoriteLanding](hc, webURL(c, pb.MeteoriteLandingsService_Feed_FullMethodName), webOpts(false)...)
	feedOK := func(what string) {
		t.Helper()
		fs, err := fc.CallServerStream(ctx, authed(c, &pb.FeedRequest{Messages: 3}))
		n := 0
		for err == nil && fs.Receive() {
			n++
		}
		if err == nil {
			err = fs.Err()
		}
		if err != nil || n != 3 {
			t.Errorf("a feed after %s: %d records, %v; want 3", what, n, err)
		}
	}
	feedOK("the malformed request")
	for _, tc := range []struct {
		what string
		req  *connect.Request[pb.FeedRequest]
		code connect.Code
	}{
		{"too many records", authed(c, &pb.FeedRequest{Messages: api.MaxStreamMessages + 1}), connect.CodeInvalidArgument},
		{"a negative rate", authed(c, &pb.FeedRequest{Messages: 1, Rate: -1}), connect.CodeInvalidArgument},
		{"no token", connect.NewRequest(&pb.FeedRequest{Messages: 1}), connect.CodeUnauthenticated},
	} {
		fs, err := fc.CallServerStream(ctx, tc.req)
		if err == nil {
			for fs.Receive() {
			}
			err = fs.Err()
		}
		if connect.CodeOf(err) != tc.code {
			t.Errorf("feed with %s: %v, want %v", tc.what, err, tc.code)
		}
		feedOK(tc.what)
	}
	// A chat message over the limit: resource_exhausted, the stream ends.
	cc := connect.NewClient[pb.ChatMessage, pb.ChatMessage](hc, webURL(c, pb.MeteoriteLandingsService_Chat_FullMethodName), webOpts(false)...)
	cs := cc.CallBidiStream(ctx)
	cs.RequestHeader().Set("Authorization", "Bearer "+c.token)
	err := cs.Send(&pb.ChatMessage{Seq: 1, Text: strings.Repeat("x", api.MaxChatMessageBytes+1)})
	if err == nil || errors.Is(err, io.EOF) {
		_, err = cs.Receive()
	}
	if connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Errorf("chat message over %d bytes: %v, want resource_exhausted", api.MaxChatMessageBytes, err)
	}
	_ = cs.CloseResponse()
	// An upload record that is not a landing: invalid_argument naming it.
	uc := connect.NewClient[pb.MeteoriteLanding, pb.StatusResponse](hc, webURL(c, pb.MeteoriteLandingsService_UploadStream_FullMethodName), webOpts(false)...)
	us := uc.CallClientStream(ctx)
	us.RequestHeader().Set("Authorization", "Bearer "+c.token)
	_ = us.Send(&pb.MeteoriteLanding{Id: 1, Year: &timestamppb.Timestamp{Nanos: -1}})
	if _, err := us.CloseAndReceive(); connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "record 0") {
		t.Errorf("an upload of a bad record: %v, want invalid_argument naming record 0", err)
	}
	feedOK("the bad chat and upload")
}

// TestWebFeedSlowReaders: 10 Connect feeds over HTTP/1.1, 10 gRPC-Web
// feeds over HTTP/1.1 and 10 Connect feeds on one HTTP/2 connection, of
// 100,000 records each, whose clients stop reading (16 KiB socket
// buffers), hold little of the server's memory, leave it serving, and are
// each cut after the write timeout (1 s): none arrives whole.
func TestWebFeedSlowReaders(t *testing.T) {
	testmode.SkipShort(t, "holds 30 stalled feeds for a few seconds; runs in the normal step")
	// What the heap holds after a collection, and whether a client that
	// stopped reading had stalled long enough to be cut, depend on the
	// machine's timing (a starved client reads late): retried, each
	// attempt's figures logged.
	timing.Retry(t, 2, func(attempt int) []string { return webFeedSlowReaders(t, attempt) })
}

func webFeedSlowReaders(t *testing.T, attempt int) (misses []string) {
	const limit = 64 << 20
	c := startClient(t, server.Config{MemoryLimit: limit, WriteTimeout: time.Second, MaxConns: 1000, Token: "tok"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	warm := connect.NewClient[pb.FeedRequest, pb.MeteoriteLanding](webHTTP(t, false, nil), webURL(c, pb.MeteoriteLandingsService_Feed_FullMethodName), webOpts(false)...)
	ws, err := warm.CallServerStream(ctx, authed(c, &pb.FeedRequest{Messages: api.MaxStreamMessages, Rate: 1}))
	if err == nil && !ws.Receive() {
		err = fmt.Errorf("no record: %v", ws.Err())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var base runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)
	type stalled struct {
		kind string
		fs   *connect.ServerStreamForClient[pb.MeteoriteLanding]
	}
	var feeds []stalled
	open := func(hc *http.Client, web bool, kind string) {
		fc := connect.NewClient[pb.FeedRequest, pb.MeteoriteLanding](hc, webURL(c, pb.MeteoriteLandingsService_Feed_FullMethodName), webOpts(web)...)
		fs, err := fc.CallServerStream(ctx, authed(c, &pb.FeedRequest{Messages: api.MaxStreamMessages}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fs.Close() })
		feeds = append(feeds, stalled{kind, fs})
	}
	for range 10 {
		open(webHTTP(t, false, dialSmallBuffer), false, "Connect HTTP/1.1")
		open(webHTTP(t, false, dialSmallBuffer), true, "gRPC-Web HTTP/1.1")
	}
	h2 := webHTTP(t, true, dialSmallBuffer)
	for range 10 {
		open(h2, false, "Connect HTTP/2")
	}
	for range 3 {
		time.Sleep(time.Second)
		if _, err := c.grpc.GetVersion(c.ctx(t), &pb.EmptyRequest{}); err != nil {
			t.Errorf("GetVersion under the stalled feeds: %v", err)
		}
	}
	var held runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&held)
	grew := int64(held.HeapAlloc) - int64(base.HeapAlloc)
	t.Logf("attempt %d (load average %.1f): the stalled feeds hold %.1f MiB of heap (%.1f MiB before; the budget is %d MiB)", attempt, timing.LoadAverage(), mibOf(grew), mibOf(int64(base.HeapAlloc)), limit>>22)
	if grew > limit/4 {
		misses = append(misses, fmt.Sprintf("the stalled feeds hold %.1f MiB of heap, more than the server's %d MiB budget", mibOf(grew), limit>>22))
	}
	// Now read: each feed ends early, cut by the server.
	var wg sync.WaitGroup
	var mu sync.Mutex
	whole := map[string]int{}
	for _, f := range feeds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for f.fs.Receive() {
				n++
			}
			if n >= api.MaxStreamMessages && f.fs.Err() == nil {
				mu.Lock()
				whole[f.kind]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(whole) > 0 {
		misses = append(misses, fmt.Sprintf("stalled feeds arrived whole (%v of %d): the server did not cut them after its write timeout", whole, len(feeds)))
	}
	return misses
}
