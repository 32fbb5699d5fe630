package server_test

// The streams both ways (issue 42): UploadStream, Chat and Feed on gRPC,
// and their REST-world counterparts (chunked NDJSON upload, WebSocket chat
// and feed, SSE feed), over real sockets against the real server.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/testmode"
)

// wsDial opens a WebSocket to path on c's server, with c's token.
func wsDial(t testing.TB, c *client, path string, subprotocols ...string) (*websocket.Conn, *http.Response, error) {
	return wsDialWith(t, c, http.DefaultClient, path, subprotocols...)
}

func wsDialWith(t testing.TB, c *client, hc *http.Client, path string, subprotocols ...string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	ws, resp, err := websocket.Dial(c.ctx(t), "ws://"+c.addr+path, &websocket.DialOptions{HTTPClient: hc, HTTPHeader: h, Subprotocols: subprotocols})
	if err == nil {
		t.Cleanup(func() { ws.CloseNow() })
	}
	return ws, resp, err
}

// checkStamps checks a feed's records: their ids in order and each stamp
// between before and after, never going back.
func checkStamps(t *testing.T, what string, ids []uint32, stamps []int64, before, after time.Time) {
	t.Helper()
	want, _ := data.IDsN(len(ids))
	for i := range ids {
		if ids[i] != want[i] {
			t.Fatalf("%s: record %d has id %d, want %d", what, i, ids[i], want[i])
		}
		if stamps[i] < before.UnixNano() || stamps[i] > after.UnixNano() || (i > 0 && stamps[i] < stamps[i-1]) {
			t.Fatalf("%s: record %d stamped %d, outside [%d, %d] or before the one before", what, i, stamps[i], before.UnixNano(), after.UnixNano())
		}
	}
}

// TestStreamsGRPC: UploadStream answers SUCCESS after the client closes,
// Chat echoes each message with its seq and send time in order, and Feed
// pushes the records asked for at the rate asked for (5 records at 50/s
// take at least 80 ms), each stamped with the server's send time.
func TestStreamsGRPC(t *testing.T) {
	c := startClient(t, server.Config{})
	ctx := c.ctx(t)
	up, err := c.grpc.UploadStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range data.MustLandings()[:5] {
		if err := up.Send(l.Proto()); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := up.CloseAndRecv(); err != nil || st.GetStatus() != data.Success {
		t.Fatalf("UploadStream: %v, %v; want SUCCESS", st, err)
	}

	chat, err := c.grpc.Chat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint64(3) {
		sent := time.Now().UnixNano()
		if err := chat.Send(&pb.ChatMessage{Seq: i, SentUnixNano: sent, Text: "hello"}); err != nil {
			t.Fatal(err)
		}
		got, err := chat.Recv()
		if err != nil || got.GetSeq() != i || got.GetSentUnixNano() != sent || got.GetText() != "hello" {
			t.Fatalf("Chat answer %d: %v, %v; want seq %d, sent %d, hello", i, got, err, i, sent)
		}
	}
	if err := chat.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := chat.Recv(); err != io.EOF {
		t.Fatalf("Chat after CloseSend: %v, want EOF", err)
	}

	before := time.Now()
	feed, err := c.grpc.Feed(ctx, &pb.FeedRequest{Messages: 5, Rate: 50})
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint32
	var stamps []int64
	for {
		m, err := feed.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ids, stamps = append(ids, m.GetId()), append(stamps, m.GetSentUnixNano())
	}
	after := time.Now()
	if len(ids) != 5 {
		t.Fatalf("Feed: %d records, want 5", len(ids))
	}
	checkStamps(t, "Feed", ids, stamps, before, after)
	if span := time.Duration(stamps[4] - stamps[0]); span < 80*time.Millisecond {
		t.Errorf("Feed at 50/s: 5 records stamped %v apart, want at least 80 ms", span)
	}
}

// TestStreamsREST: the same three over WebSocket (chat and feed, JSON text
// frames and protobuf binary ones), Server-Sent Events (feed) and a
// chunked NDJSON POST (upload).
func TestStreamsREST(t *testing.T) {
	c := startClient(t, server.Config{})
	ctx := c.ctx(t)

	ws, _, err := wsDial(t, c, api.PathChat)
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint64(3) {
		m := data.ChatMessage{Seq: i, SentUnixNano: time.Now().UnixNano(), Text: "hi"}
		b, _ := json.Marshal(m)
		if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
		typ, ans, err := ws.Read(ctx)
		var got data.ChatMessage
		if err == nil {
			err = json.Unmarshal(ans, &got)
		}
		if err != nil || typ != websocket.MessageText || got != m {
			t.Fatalf("chat JSON answer %d: %v %s, %v; want text %+v", i, typ, ans, err, m)
		}
		pm := &pb.ChatMessage{Seq: i, SentUnixNano: m.SentUnixNano, Text: "bin"}
		b, _ = proto.Marshal(pm)
		if err := ws.Write(ctx, websocket.MessageBinary, b); err != nil {
			t.Fatal(err)
		}
		typ, ans, err = ws.Read(ctx)
		gp := &pb.ChatMessage{}
		if err == nil {
			err = proto.Unmarshal(ans, gp)
		}
		if err != nil || typ != websocket.MessageBinary || !proto.Equal(gp, pm) {
			t.Fatalf("chat protobuf answer %d: %v %v, %v; want binary %v", i, typ, gp, err, pm)
		}
	}
	ws.Close(websocket.StatusNormalClosure, "")

	for _, sub := range []string{"", api.SubprotocolProtobuf} {
		before := time.Now()
		ws, _, err := wsDial(t, c, api.PathFeed+"?messages=4&rate=100", sub)
		if err != nil {
			t.Fatal(err)
		}
		var ids []uint32
		var stamps []int64
		for {
			typ, b, err := ws.Read(ctx)
			if websocket.CloseStatus(err) == websocket.StatusNormalClosure {
				break
			}
			if err != nil {
				t.Fatalf("feed %q: %v", sub, err)
			}
			if sub == api.SubprotocolProtobuf {
				m := &pb.MeteoriteLanding{}
				if typ != websocket.MessageBinary || proto.Unmarshal(b, m) != nil {
					t.Fatalf("feed protobuf: a %v frame %q", typ, b)
				}
				ids, stamps = append(ids, m.GetId()), append(stamps, m.GetSentUnixNano())
				continue
			}
			var r data.FeedRecord
			if typ != websocket.MessageText || json.Unmarshal(b, &r) != nil {
				t.Fatalf("feed JSON: a %v frame %q", typ, b)
			}
			ids, stamps = append(ids, r.ID), append(stamps, r.SentUnixNano)
		}
		if len(ids) != 4 {
			t.Fatalf("feed %q: %d records, want 4", sub, len(ids))
		}
		checkStamps(t, "WebSocket feed "+sub, ids, stamps, before, time.Now())
	}

	before := time.Now()
	resp, body := c.do(t, http.MethodGet, api.PathFeed+"?messages=3", nil, "Accept", api.TypeEventStream)
	wantStatus(t, resp, body, http.StatusOK)
	wantContentType(t, resp, api.TypeEventStream)
	var ids []uint32
	var stamps []int64
	for ev := range strings.SplitSeq(strings.TrimSpace(string(body)), "\n\n") {
		var r data.FeedRecord
		if err := json.Unmarshal([]byte(strings.TrimPrefix(ev, "data: ")), &r); err != nil {
			t.Fatalf("SSE event %q: %v", ev, err)
		}
		ids, stamps = append(ids, r.ID), append(stamps, r.SentUnixNano)
	}
	if len(ids) != 3 {
		t.Fatalf("SSE feed: %d events, want 3: %q", len(ids), body)
	}
	checkStamps(t, "SSE feed", ids, stamps, before, time.Now())

	// The upload, one record a chunk as the client writes them.
	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+c.addr+api.PathUpload, pr)
	req.Header.Set("Content-Type", api.TypeNDJSON)
	go func() {
		for _, l := range data.MustLandings()[:10] {
			b, _ := json.Marshal(l)
			if _, err := pw.Write(append(b, '\n')); err != nil {
				return
			}
		}
		pw.Close()
	}()
	r, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusOK || strings.TrimSpace(string(b)) != `"SUCCESS"` || len(r.TransferEncoding) > 0 && r.ContentLength >= 0 {
		t.Fatalf("NDJSON upload: %s %s, want 200 \"SUCCESS\"", r.Status, b)
	}
}

// TestStreamsBadInput: each bad stream gets a close code or a status with
// a message, and the server goes on serving: a WebSocket upgrade without
// the token (401 before the upgrade; ?access_token= works), a chat frame
// over 64 KiB (1009), a chat message that does not parse (1007, with the
// reason), an upload record that does not decode (400) or is too long
// (413), a bad feed request (400 / INVALID_ARGUMENT), a gRPC chat message
// over the limit (RESOURCE_EXHAUSTED) and an upload record that does not
// convert (INVALID_ARGUMENT).
func TestStreamsBadInput(t *testing.T) {
	c := startClient(t, server.Config{Token: "s3cret"})
	ctx := c.ctx(t)
	anon := newClient(t, c.addr, "")
	if _, resp, err := wsDial(t, anon, api.PathChat); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("chat upgrade without the token: %v (%v), want 401", err, resp)
	}
	if ws, _, err := wsDial(t, anon, api.PathChat+"?"+api.QueryAccessToken+"=s3cret"); err != nil {
		t.Errorf("chat upgrade with ?access_token=: %v", err)
	} else {
		ws.Close(websocket.StatusNormalClosure, "")
	}

	closes := []struct {
		name string
		typ  websocket.MessageType
		msg  []byte
		code websocket.StatusCode
		why  string
	}{
		{"over the size limit", websocket.MessageBinary, make([]byte, api.MaxChatMessageBytes+1), websocket.StatusMessageTooBig, ""},
		{"not JSON", websocket.MessageText, []byte(`{"seq": "one"`), websocket.StatusInvalidFramePayloadData, "message 0 is not a chat message"},
		{"not protobuf", websocket.MessageBinary, []byte{0xff, 0xff, 0xff}, websocket.StatusInvalidFramePayloadData, "message 0 is not a ChatMessage"},
	}
	for _, tc := range closes {
		ws, _, err := wsDial(t, c, api.PathChat)
		if err != nil {
			t.Fatal(err)
		}
		_ = ws.Write(ctx, tc.typ, tc.msg)
		_, _, err = ws.Read(ctx)
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != tc.code || !strings.Contains(ce.Reason, tc.why) {
			t.Errorf("chat %s: %v, want close %d %q", tc.name, err, tc.code, tc.why)
		} else {
			t.Logf("chat %s: close %d %q", tc.name, ce.Code, ce.Reason)
		}
	}

	for _, tc := range []struct {
		name, body string
		code       int
		why        string
	}{
		{"bad record", "{\"id\": 1}\n{\"id\": \"two\"}\n", http.StatusBadRequest, "record 1"},
		{"record too long", `{"name": "` + strings.Repeat("x", api.MaxChatMessageBytes) + "\"}\n", http.StatusRequestEntityTooLarge, "record 0 is over"},
	} {
		resp, body := c.do(t, http.MethodPost, api.PathUpload, []byte(tc.body), "Content-Type", api.TypeNDJSON)
		wantJSONError(t, resp, body, tc.why)
		wantStatus(t, resp, body, tc.code)
	}
	resp, body := c.do(t, http.MethodGet, api.PathFeed+"?rate=-1", nil, "Accept", api.TypeEventStream)
	wantStatus(t, resp, body, http.StatusBadRequest)
	wantJSONError(t, resp, body, "rate -1")

	grpcCode := func(what string, err error, want codes.Code, msg string) {
		t.Helper()
		if st, _ := status.FromError(err); st.Code() != want || !strings.Contains(st.Message(), msg) {
			t.Errorf("%s: %v, want %v with %q", what, err, want, msg)
		}
	}
	feed, err := c.grpc.Feed(ctx, &pb.FeedRequest{Messages: api.MaxStreamMessages + 1})
	if err == nil {
		_, err = feed.Recv()
	}
	grpcCode("Feed of too many", err, codes.InvalidArgument, "messages")
	chat, err := c.grpc.Chat(ctx)
	if err == nil {
		_ = chat.Send(&pb.ChatMessage{Text: strings.Repeat("x", api.MaxChatMessageBytes)})
		_, err = chat.Recv()
	}
	grpcCode("Chat over the limit", err, codes.ResourceExhausted, "limit")
	up, err := c.grpc.UploadStream(ctx)
	if err == nil {
		_ = up.Send(&pb.MeteoriteLanding{Id: 1, Year: &timestamppb.Timestamp{Nanos: -1}})
		_, err = up.CloseAndRecv()
	}
	grpcCode("UploadStream of a bad record", err, codes.InvalidArgument, "record 0")
	noToken, err := anon.grpc.Chat(context.Background())
	if err == nil {
		_, err = noToken.Recv()
	}
	grpcCode("Chat without the token", err, codes.Unauthenticated, "token")

	if _, err := c.grpc.GetVersion(ctx, &pb.EmptyRequest{}); err != nil {
		t.Errorf("GetVersion after the bad streams: %v", err)
	}
	resp, body = c.do(t, http.MethodGet, api.PathVersion, nil)
	wantStatus(t, resp, body, http.StatusOK)
}

// TestStreamsBudgetRefuses: with the server's memory budget held by REST
// clients that do not read their answers (as TestMemoryBudgetRefuses), a
// new stream is refused before it starts: a WebSocket upgrade with 503 and
// the budget named, a gRPC Chat RESOURCE_EXHAUSTED; health is served.
func TestStreamsBudgetRefuses(t *testing.T) {
	c := startClient(t, server.Config{MemoryLimit: 64 << 20}) // a 16 MiB budget
	for range 60 {
		nc := dialRaw(t, c.addr)
		t.Cleanup(func() { nc.Close() })
		fmt.Fprintf(nc, "GET %s?records=%d HTTP/1.1\r\nHost: x\r\n\r\n", api.PathList, api.MaxRecords)
	}
	time.Sleep(time.Second) // the answers start
	_, resp, err := wsDial(t, c, api.PathChat)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("chat upgrade with the budget held: %v (%v), want 503", err, resp)
	}
	chat, err := c.grpc.Chat(c.ctx(t))
	if err == nil {
		_, err = chat.Recv()
	}
	if st, _ := status.FromError(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "memory budget") {
		t.Errorf("gRPC Chat with the budget held: %v, want RESOURCE_EXHAUSTED naming the memory budget", err)
	}
	resp, body := c.do(t, http.MethodGet, api.PathHealth, nil)
	wantStatus(t, resp, body, http.StatusOK)
}

// TestFeedSlowReaders: feeds whose clients never read, 20 each over
// WebSocket, SSE and gRPC (each can fill megabytes of the kernel's socket
// buffers, which are not the server's memory), against a server with a 64 MiB memory limit (a 16 MiB budget)
// and a 1 s write timeout. The streams are admitted against the budget
// (past it, 503 / RESOURCE_EXHAUSTED: the server never takes on more than
// it holds), the stalled ones are closed (a WebSocket or SSE feed after
// the write timeout; a gRPC feed when its connection's send budget stays
// full), none is delivered whole, the Go heap stays under the memory
// limit throughout, and GetVersion answers all along.
func TestFeedSlowReaders(t *testing.T) {
	testmode.SkipShort(t, "holds 60 stalled feeds for several seconds; runs in the normal step")
	const limit = 64 << 20
	// MaxConns above the 60 feeds: the budget, not the connection gate,
	// is what this test is about (TestStreamsBudgetRefuses).
	c := startClient(t, server.Config{MemoryLimit: limit, WriteTimeout: time.Second, MaxConns: 1000})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The 100,000 records are the server's own data (made once, kept):
	// made before the baseline.
	warm, err := c.grpc.Feed(ctx, &pb.FeedRequest{Messages: api.MaxStreamMessages, Rate: 1})
	if err == nil {
		_, err = warm.Recv()
	}
	if err != nil {
		t.Fatal(err)
	}
	var base runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)
	path := api.PathFeed + fmt.Sprintf("?messages=%d", api.MaxStreamMessages)
	var wss []*websocket.Conn
	refused := 0
	hc := &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: dialSmallBuffer}}
	for range 20 {
		ws, resp, err := wsDialWith(t, c, hc, path)
		switch {
		case err == nil:
			wss = append(wss, ws)
		case resp != nil && resp.StatusCode == http.StatusServiceUnavailable:
			refused++
		default:
			t.Fatalf("feed upgrade: %v", err)
		}
	}
	var sses []*http.Response
	for range 20 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.addr+path, nil)
		req.Header.Set("Accept", api.TypeEventStream)
		req.Header.Set("Authorization", "Bearer "+c.token)
		tr := &http.Transport{Proxy: nil, DisableCompression: true, DialContext: dialSmallBuffer}
		t.Cleanup(tr.CloseIdleConnections)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode == http.StatusServiceUnavailable {
			refused++
			continue
		}
		sses = append(sses, resp)
	}
	var feeds []grpc.ServerStreamingClient[pb.MeteoriteLanding]
	grpcClosed := 0
	for range 2 {
		// A fixed 64 KiB window (no BDP growth): grpc-go's client
		// otherwise reads ahead of Recv as far as its window has grown.
		cc, err := grpc.NewClient("passthrough:///"+c.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10),
			grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return dialSmallBuffer(ctx, "tcp", addr) }))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		gc := pb.NewMeteoriteLandingsServiceClient(cc)
		for range 10 {
			f, err := gc.Feed(ctx, &pb.FeedRequest{Messages: api.MaxStreamMessages})
			if err != nil {
				t.Fatal(err)
			}
			feeds = append(feeds, f)
		}
	}
	t.Logf("%v: %d WebSocket and %d SSE feeds stalled, %d refused (503); %d gRPC feeds", time.Now().Format(time.StampMilli), len(wss), len(sses), refused, len(feeds))
	for range 3 {
		time.Sleep(time.Second)
		if _, err := c.grpc.GetVersion(ctx, &pb.EmptyRequest{}); err != nil {
			t.Errorf("GetVersion under the stalled feeds: %v", err)
		}
	}
	// What the stalled feeds hold (client and server, in this process),
	// live after a collection: garbage is the collector's business (serve
	// sets Go's soft limit to the memory limit; this test does not).
	var held runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&held)
	grew := int64(held.HeapAlloc) - int64(base.HeapAlloc)
	if grew > limit/4 {
		t.Errorf("the stalled feeds hold %.1f MiB of heap (%.1f MiB before), more than the server's %d MiB budget", mibOf(grew), mibOf(int64(base.HeapAlloc)), limit>>22)
	} else {
		t.Logf("the stalled feeds hold %.1f MiB of heap (%.1f MiB before; the budget is %d MiB); %s", mibOf(grew), mibOf(int64(base.HeapAlloc)), limit>>22, scrapeBudget(t, c.http, c.addr))
	}
	// Now read: each stalled feed ends early, cut by the server.
	var wg sync.WaitGroup
	var mu sync.Mutex
	whole := map[string]int{}
	countWS := func(ws *websocket.Conn) {
		defer wg.Done()
		n := 0
		for {
			if _, _, err := ws.Read(ctx); err != nil {
				if websocket.CloseStatus(err) == websocket.StatusNormalClosure || n >= api.MaxStreamMessages {
					mu.Lock()
					whole["WebSocket"]++
					mu.Unlock()
				}
				return
			}
			n++
		}
	}
	for _, ws := range wss {
		wg.Add(1)
		go countWS(ws)
	}
	for _, resp := range sses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") {
					n++
				}
			}
			if n >= api.MaxStreamMessages {
				mu.Lock()
				whole["SSE"]++
				mu.Unlock()
			}
		}()
	}
	for _, f := range feeds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for {
				_, err := f.Recv()
				if err == io.EOF {
					mu.Lock()
					whole["gRPC"]++
					mu.Unlock()
				}
				if err != nil {
					if st, _ := status.FromError(err); err != io.EOF && st.Code() == codes.Unavailable {
						mu.Lock()
						grpcClosed++
						mu.Unlock()
					}
					return
				}
				n++
			}
		}()
	}
	wg.Wait()
	t.Logf("%v: every stalled feed read to its end", time.Now().Format(time.StampMilli))
	if len(whole) > 0 {
		t.Errorf("stalled feeds delivered whole (the server waited for them instead of closing): %v", whole)
	}
	t.Logf("gRPC feeds ended UNAVAILABLE (their connection closed): %d of %d", grpcClosed, len(feeds))
	if _, err := c.grpc.GetVersion(ctx, &pb.EmptyRequest{}); err != nil {
		t.Errorf("GetVersion after the stalled feeds: %v", err)
	}
}

// dialSmallBuffer dials with a 16 KiB socket receive buffer: without it
// Linux's autotuning (tcp_rmem up to 32 MiB here) takes a whole 25 MB feed
// into the kernel of a client that never reads, and the server never sees
// a slow reader. And with a real network's segment size (TCP_MAXSEG 1448,
// set before connecting, so the server is told it): loopback's 64 KiB
// segments do not fit such a buffer's accounting, so the client's kernel
// pruned and dropped data it had advertised room for, and once the test
// read, the feeds waited for the server's backed-off retransmissions:
// TestFeedSlowReaders took 33-34 s in 2 runs of 6 instead of 9 s.
func dialSmallBuffer(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, 1448) })
		return errors.Join(err, serr)
	}}
	nc, err := d.DialContext(ctx, network, addr)
	if err == nil {
		err = nc.(*net.TCPConn).SetReadBuffer(16 << 10)
	}
	return nc, err
}

func maxOf(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}
