package server_test

// The HTTP/2 router (h2route.go): one port, HTTP/2 connections sent to the
// native gRPC server or to the REST handler by their first request's
// content-type, with real grpc-go and net/http clients and raw frames.

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// h2cClient is net/http's client speaking h2c with prior knowledge, one
// connection for every request.
func h2cClient(t testing.TB) *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: hangGuard}
}

func h2cGet(t *testing.T, hc *http.Client, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s over h2c: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s over h2c: %v", url, err)
	}
	if resp.ProtoMajor != 2 {
		t.Fatalf("GET %s: %s, want HTTP/2", url, resp.Proto)
	}
	return resp, b
}

// TestH2CRESTAndGRPCOnOnePort: REST over h2c (JSON and protobuf, list,
// stream, upload, many requests on one connection) and native gRPC, side by
// side on the same port, with the same answers and counted as today.
func TestH2CRESTAndGRPCOnOnePort(t *testing.T) {
	c := startClient(t, server.Config{})
	hc := h2cClient(t)
	base := "http://" + c.addr
	for range 3 {
		resp, body := h2cGet(t, hc, base+api.PathVersion)
		if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != `"API Version 1.0"` {
			t.Fatalf("version over h2c: %s %q", resp.Status, body)
		}
	}
	_, body := h2cGet(t, hc, base+api.PathList)
	checkJSONLandings(t, "list over h2c", body)
	_, body = h2cGet(t, hc, base+api.PathStream)
	checkLandings(t, "stream over h2c", decodeNDJSON(t, body))
	resp, body := h2cGet(t, hc, base+api.PathList, "Accept", api.TypeProtobuf)
	wantContentType(t, resp, api.TypeProtobuf)
	var list pb.MeteoriteLandingList
	if err := proto.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	checkProtoLandings(t, "protobuf list over h2c", list.GetMeteoriteLandings())
	up, _ := proto.Marshal(&list)
	req, _ := http.NewRequest(http.MethodPost, base+api.PathList, bytes.NewReader(up))
	req.Header.Set("Content-Type", api.TypeProtobuf)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Fatalf("protobuf upload over h2c: %s %s %q", resp.Proto, resp.Status, body)
	}
	// gRPC on its own connection, meanwhile.
	got, err := c.grpc.GetLargePayloadAsList(c.ctx(t), &pb.EmptyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	checkProtoLandings(t, "gRPC list", got.GetMeteoriteLandings())
	m := scrape(t, c)
	for _, k := range []struct {
		p, m string
		want float64
	}{
		{string(api.REST), api.MethodGetVersion, 3},
		{string(api.REST), api.MethodGetLargePayloadAsList, 1},
		{string(api.RESTProtobuf), api.MethodGetLargePayloadAsList, 1},
		{string(api.RESTProtobuf), api.MethodPostLargePayload, 1},
		{string(api.GRPC), api.MethodGetLargePayloadAsList, 1},
	} {
		if got := m[counterKey(api.MetricRequests, k.p, k.m)]; got != k.want {
			t.Errorf("%s %s: %v requests counted, want %v", k.p, k.m, got, k.want)
		}
	}
}

// h2Exchange is one raw HTTP/2 client connection for the router's frame
// tests.
type h2Exchange struct {
	t    *testing.T
	conn net.Conn
	fr   *http2.Framer
	enc  *hpack.Encoder
	hbuf bytes.Buffer
	addr string
}

func newH2Exchange(t *testing.T, addr string) *h2Exchange {
	conn := dialRaw(t, addr)
	x := &h2Exchange{t: t, conn: conn, addr: addr}
	x.fr = http2.NewFramer(conn, conn)
	x.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	x.enc = hpack.NewEncoder(&x.hbuf)
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := x.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return x
}

// get writes a GET request's HEADERS (with END_STREAM).
func (x *h2Exchange) get(id uint32, path string, hdr ...string) {
	x.hbuf.Reset()
	kv := append([]string{":method", "GET", ":scheme", "http", ":path", path, ":authority", x.addr}, hdr...)
	for i := 0; i+1 < len(kv); i += 2 {
		_ = x.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	if err := x.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: x.hbuf.Bytes(), EndHeaders: true, EndStream: true}); err != nil {
		x.t.Fatal(err)
	}
}

// until reads frames, ACKing every SETTINGS, until stream id ended; it
// returns the SETTINGS frames seen (in order) and the response's :status.
func (x *h2Exchange) until(id uint32) (settings []map[http2.SettingID]uint32, status string) {
	x.t.Helper()
	for {
		f, err := x.fr.ReadFrame()
		if err != nil {
			x.t.Fatalf("reading until stream %d ends: %v (settings seen: %d)", id, err, len(settings))
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				m := map[http2.SettingID]uint32{}
				_ = f.ForeachSetting(func(s http2.Setting) error { m[s.ID] = s.Val; return nil })
				settings = append(settings, m)
				if err := x.fr.WriteSettingsAck(); err != nil {
					x.t.Fatal(err)
				}
			}
		case *http2.GoAwayFrame:
			x.t.Fatalf("GOAWAY %v %q", f.ErrCode, f.DebugData())
		case *http2.RSTStreamFrame:
			x.t.Fatalf("RST_STREAM %v on stream %d", f.ErrCode, f.StreamID)
		case *http2.MetaHeadersFrame:
			if f.StreamID == id {
				status = f.PseudoValue("status")
				if f.StreamEnded() {
					return settings, status
				}
			}
		case *http2.DataFrame:
			if f.StreamID == id && f.StreamEnded() {
				return settings, status
			}
		}
	}
}

// TestH2RouterSettingsAck: the router's injected SETTINGS comes first and
// sets nothing, and the client's ACK of it never reaches net/http (which
// would count it against its own SETTINGS and fail the connection),
// whether the client ACKs before sending its first request (grpc-go's
// order) or after (curl's, nghttp2's). Later requests on the connection
// are answered too.
func TestH2RouterSettingsAck(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	for _, ackFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("ack before headers %v", ackFirst), func(t *testing.T) {
			x := newH2Exchange(t, addr)
			if ackFirst {
				f, err := x.fr.ReadFrame()
				if err != nil {
					t.Fatal(err)
				}
				sf, ok := f.(*http2.SettingsFrame)
				if !ok || sf.IsAck() || sf.NumSettings() != 0 {
					t.Fatalf("first frame %v, want an empty SETTINGS", f.Header())
				}
				if err := x.fr.WriteSettingsAck(); err != nil {
					t.Fatal(err)
				}
			}
			x.get(1, api.PathVersion)
			settings, status := x.until(1)
			if status != "200" {
				t.Fatalf("first request: status %q", status)
			}
			if !ackFirst && (len(settings) < 2 || len(settings[0]) != 0) {
				t.Fatalf("SETTINGS frames seen %d, want the router's empty one then net/http's", len(settings))
			}
			// net/http's SETTINGS (MAX_CONCURRENT_STREAMS as configured).
			last := settings[len(settings)-1]
			if v, ok := last[http2.SettingMaxConcurrentStreams]; !ok || v != server.DefaultMaxConcurrentStreams {
				t.Errorf("REST HTTP/2 MAX_CONCURRENT_STREAMS %v (%v), want %d as gRPC's", v, ok, server.DefaultMaxConcurrentStreams)
			}
			for id := uint32(3); id <= 9; id += 2 {
				x.get(id, api.PathVersion)
				if _, status := x.until(id); status != "200" {
					t.Fatalf("stream %d: status %q", id, status)
				}
			}
			// A PING is answered by net/http: the connection is sound.
			if err := x.fr.WritePing(false, [8]byte{7}); err != nil {
				t.Fatal(err)
			}
			for {
				f, err := x.fr.ReadFrame()
				if err != nil {
					t.Fatal(err)
				}
				if p, ok := f.(*http2.PingFrame); ok && p.IsAck() {
					break
				}
				if g, ok := f.(*http2.GoAwayFrame); ok {
					t.Fatalf("GOAWAY %v", g.ErrCode)
				}
			}
		})
	}
}

// TestH2RouterBounds: a connection that sends the preface and then nothing,
// or DATA before any request, or a header list over the bound, is closed
// (or answered 431) within the header timeout, and the port keeps serving.
func TestH2RouterBounds(t *testing.T) {
	const timeout = 500 * time.Millisecond
	c := startClient(t, server.Config{HeaderTimeout: timeout, MaxHeaderBytes: 4 << 10})
	t.Run("silent after the preface", func(t *testing.T) {
		conn := dialRaw(t, c.addr)
		start := time.Now()
		_, _ = io.WriteString(conn, http2.ClientPreface)
		b := waitClosed(t, conn)
		if len(b) != 9 || b[3] != byte(http2.FrameSettings) {
			t.Errorf("got % x, want the router's empty SETTINGS only", b)
		}
		t.Logf("closed after %v (header timeout %v)", time.Since(start).Round(time.Millisecond), timeout)
	})
	t.Run("DATA first", func(t *testing.T) {
		x := newH2Exchange(t, c.addr)
		_ = x.fr.WriteData(1, true, []byte("junk"))
		if b := waitClosed(t, x.conn); len(b) != 9 {
			t.Errorf("got %d bytes, want the router's SETTINGS only", len(b))
		}
	})
	// A header list over the bound: as many short fields, grpc-go's and
	// net/http's own refusal (431: the router passes the request on, cut
	// short); one field longer than the whole bound, a close by the
	// router (the HPACK decoder refuses the string), after nothing but its
	// SETTINGS.
	t.Run("header list too long", func(t *testing.T) {
		x := newH2Exchange(t, c.addr)
		var many []string
		for i := range 64 {
			many = append(many, fmt.Sprintf("x-long-%d", i), strings.Repeat("a", 128))
		}
		x.get(1, api.PathVersion, many...)
		if _, status := x.until(1); status != "431" {
			t.Errorf("64 fields of 128 bytes over a 4 KiB bound: status %q, want 431", status)
		}
	})
	t.Run("header field too long", func(t *testing.T) {
		x := newH2Exchange(t, c.addr)
		x.get(1, api.PathVersion, "x-long", strings.Repeat("a", 8<<10))
		if b := waitClosed(t, x.conn); len(b) != 9 || b[3] != byte(http2.FrameSettings) {
			t.Errorf("an 8 KiB field over a 4 KiB bound: got % x, want the router's SETTINGS, then a close", b)
		}
	})
	healthy(t, c)
}

// TestH2RouteIsPerConnection: later requests go where a connection's first
// went. On a REST connection a gRPC call is answered too (by connect, over
// net/http's HTTP/2: counted as grpc); on a connection a client opened
// directly with gRPC, a REST request gets grpc-go's 415
// (TestH2OneConnectionEveryProtocol has health, reflection, the payload's
// service and the proxies' case).
func TestH2RouteIsPerConnection(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	x := newH2Exchange(t, addr)
	x.get(1, api.PathVersion)
	if _, status := x.until(1); status != "200" {
		t.Fatalf("REST first: %q", status)
	}
	x.grpcGetVersion(3)
	var grpcStatus string
	for grpcStatus == "" {
		f, err := x.fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if h, ok := f.(*http2.MetaHeadersFrame); ok && h.StreamID == 3 {
			for _, hf := range h.RegularFields() {
				if hf.Name == "grpc-status" {
					grpcStatus = hf.Value
				}
			}
		}
	}
	if grpcStatus != "0" {
		t.Errorf("gRPC call on a REST connection: grpc-status %q", grpcStatus)
	}

	g := newH2Exchange(t, addr)
	g.grpcGetVersion(1)
	g.until(1)
	g.get(3, api.PathVersion)
	if _, status := g.until(3); status != "415" {
		t.Errorf("REST on a gRPC connection: %q, want grpc-go's 415", status)
	}
}

// grpcGetVersion makes a gRPC GetVersion call on stream id.
func (x *h2Exchange) grpcGetVersion(id uint32) {
	x.hbuf.Reset()
	for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", pb.MeteoriteLandingsService_GetVersion_FullMethodName},
		{":authority", x.addr}, {"content-type", api.TypeGRPC}, {"te", "trailers"}} {
		_ = x.enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	if err := x.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: x.hbuf.Bytes(), EndHeaders: true}); err != nil {
		x.t.Fatal(err)
	}
	if err := x.fr.WriteData(id, true, []byte{0, 0, 0, 0, 0}); err != nil {
		x.t.Fatal(err)
	}
}
