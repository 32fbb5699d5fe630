package server_test

// One HTTP/2 connection for every protocol: what a reverse proxy's pooled
// upstream connection carries (Caddy, Envoy and Traefik send every
// client's requests, REST and gRPC, over a few h2c connections to the
// backend). A client that does it on purpose, on ONE TCP connection.

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/http2"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/payload/payloadtest"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/testmode"
	"github.com/meteorbench/meteorbench/internal/timing"
)

// oneConn is an HTTP/2 client held to one h2c connection (x/net's
// ClientConn on one net.Conn): every request goes over it.
type oneConn struct {
	t    *testing.T
	addr string
	cc   *http2.ClientConn
}

func dialOne(t *testing.T, addr string) *oneConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, hangGuard)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := (&http2.Transport{AllowHTTP: true}).NewClientConn(conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return &oneConn{t: t, addr: addr, cc: cc}
}

// do sends one request on the connection and reads the whole answer.
// hdr holds header name/value pairs.
func (o *oneConn) do(method, path string, body []byte, hdr ...string) (*http.Response, []byte) {
	o.t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+o.addr+path, r)
	if err != nil {
		o.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := o.cc.RoundTrip(req)
	if err != nil {
		o.t.Fatalf("%s %s on the one connection: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		o.t.Fatalf("%s %s on the one connection: reading the answer: %v", method, path, err)
	}
	return resp, b
}

// rest GETs path and returns the status code.
func (o *oneConn) rest(path string, hdr ...string) int {
	o.t.Helper()
	resp, _ := o.do(http.MethodGet, path, nil, hdr...)
	return resp.StatusCode
}

// grpc makes a unary gRPC call (one request message, one answer) on the
// connection and returns its grpc-status (and message).
func (o *oneConn) grpc(method string, req, answer proto.Message, hdr ...string) (code, msg string) {
	o.t.Helper()
	m, err := proto.Marshal(req)
	if err != nil {
		o.t.Fatal(err)
	}
	frame := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(m)))
	resp, body := o.do(http.MethodPost, method, append(frame, m...),
		append([]string{"Content-Type", api.TypeGRPC, "Te", "trailers"}, hdr...)...)
	code, msg = resp.Trailer.Get("Grpc-Status"), resp.Trailer.Get("Grpc-Message")
	if code == "" { // a trailers-only answer
		code, msg = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	if code == "0" {
		if len(body) < 5 || int(binary.BigEndian.Uint32(body[1:5])) != len(body)-5 {
			o.t.Fatalf("%s: a %d-byte answer is not one gRPC message", method, len(body))
		}
		if err := proto.Unmarshal(body[5:], answer); err != nil {
			o.t.Fatalf("%s: %v", method, err)
		}
	}
	return code, msg
}

// mixed makes REST, gRPC data, health and reflection calls on o and checks
// each answer.
func (o *oneConn) mixed() {
	t := o.t
	t.Helper()
	if s := o.rest(api.PathVersion); s != http.StatusOK {
		t.Errorf("REST GET %s: %d", api.PathVersion, s)
	}
	var v pb.Version
	if code, msg := o.grpc(pb.MeteoriteLandingsService_GetVersion_FullMethodName, &pb.EmptyRequest{}, &v); code != "0" || v.GetApiVersion() != data.Version {
		t.Errorf("gRPC GetVersion: grpc-status %q %q, version %q", code, msg, v.GetApiVersion())
	}
	var list pb.MeteoriteLandingList
	if code, msg := o.grpc(pb.MeteoriteLandingsService_GetLargePayloadAsList_FullMethodName, &pb.EmptyRequest{}, &list); code != "0" {
		t.Errorf("gRPC GetLargePayloadAsList: grpc-status %q %q", code, msg)
	} else {
		checkProtoLandings(t, "gRPC list on the shared connection", list.GetMeteoriteLandings())
	}
	var hr healthpb.HealthCheckResponse
	if code, msg := o.grpc(healthpb.Health_Check_FullMethodName, &healthpb.HealthCheckRequest{}, &hr); code != "0" || hr.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("gRPC health Check: grpc-status %q %q, %v", code, msg, hr.GetStatus())
	}
	var rr reflectpb.ServerReflectionResponse
	code, msg := o.grpc(reflectpb.ServerReflection_ServerReflectionInfo_FullMethodName,
		&reflectpb.ServerReflectionRequest{MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{}}, &rr)
	var names []string
	for _, s := range rr.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	if code != "0" || !slices.Contains(names, pb.MeteoriteLandingsService_ServiceDesc.ServiceName) || !slices.Contains(names, healthpb.Health_ServiceDesc.ServiceName) {
		t.Errorf("gRPC reflection ListServices: grpc-status %q %q, services %q", code, msg, names)
	}
	resp, body := o.do(http.MethodGet, api.PathList, nil, "Accept", api.TypeProtobuf)
	var rl pb.MeteoriteLandingList
	if resp.StatusCode != http.StatusOK || proto.Unmarshal(body, &rl) != nil {
		t.Errorf("REST protobuf list: %s", resp.Status)
	} else {
		checkProtoLandings(t, "REST protobuf list on the shared connection", rl.GetMeteoriteLandings())
	}
	if st := o.cc.State(); st.Closed || st.Closing {
		t.Errorf("the connection is closing after the calls: %+v", st)
	}
}

// TestH2OneConnectionEveryProtocol: REST and gRPC (data, health,
// reflection) on one HTTP/2 connection, whichever comes first, as a proxy
// sends them; counted by protocol as on their own connections. A client
// that connects directly and opens with gRPC keeps grpc-go's native
// transport, which answers REST with 415 (h2route.go says why).
func TestH2OneConnectionEveryProtocol(t *testing.T) {
	c := startClient(t, server.Config{})
	t.Run("REST first", func(t *testing.T) {
		o := dialOne(t, c.addr)
		o.mixed()
		o.mixed()
	})
	t.Run("gRPC first through a proxy", func(t *testing.T) {
		for _, h := range []string{"X-Forwarded-For", "X-Forwarded-Proto", "Forwarded", "Via"} {
			o := dialOne(t, c.addr)
			var v pb.Version
			if code, msg := o.grpc(pb.MeteoriteLandingsService_GetVersion_FullMethodName, &pb.EmptyRequest{}, &v, h, "x"); code != "0" {
				t.Fatalf("gRPC first, with %s: grpc-status %q %q", h, code, msg)
			}
			o.mixed()
		}
	})
	t.Run("gRPC first, direct", func(t *testing.T) {
		o := dialOne(t, c.addr)
		var v pb.Version
		if code, msg := o.grpc(pb.MeteoriteLandingsService_GetVersion_FullMethodName, &pb.EmptyRequest{}, &v); code != "0" {
			t.Fatalf("gRPC first: grpc-status %q %q", code, msg)
		}
		if s := o.rest(api.PathVersion); s != http.StatusUnsupportedMediaType {
			t.Errorf("REST after gRPC on a direct connection: %d, want grpc-go's 415 (the native transport)", s)
		}
	})
	// The payload's service is grpc-go's alone (connect serves the
	// contract's): through ServeHTTP, admitted and charged there.
	t.Run("payload service, REST first", func(t *testing.T) {
		p := payloadtest.Load(t, shapeFile(shapes[0]), payload.Options{})
		o := dialOne(t, servertest.Start(t, server.Config{Payload: p}))
		if s := o.rest(api.PathList); s != http.StatusOK {
			t.Fatalf("REST list of the payload: %d", s)
		}
		for _, m := range []string{"GetVersion", "GetLargePayloadAsList"} {
			var answer emptypb.Empty // keeps the fields it does not know
			if code, msg := o.grpc("/"+payload.ServiceName+"/"+m, &pb.EmptyRequest{}, &answer); code != "0" {
				t.Errorf("gRPC %s of the payload after REST: grpc-status %q %q", m, code, msg)
			} else if m == "GetLargePayloadAsList" && len(answer.ProtoReflect().GetUnknown()) < 100 {
				t.Errorf("gRPC %s of the payload: %d bytes", m, len(answer.ProtoReflect().GetUnknown()))
			}
		}
	})
	// Counted as gRPC, whichever server's side served them.
	m := scrape(t, c)
	if got := m[counterKey(api.MetricRequests, string(api.GRPC), api.MethodGetVersion)]; got != 2+4*2+1 {
		t.Errorf("gRPC GetVersion: %v requests counted, want 11", got)
	}
	if got := m[counterKey(api.MetricRequests, string(api.REST), api.MethodGetVersion)]; got != 2+4 {
		t.Errorf("REST GetVersion: %v requests counted, want 6", got)
	}
}

// TestH2ProxiedGRPCNative: with Config.ProxiedGRPCNative, a connection
// opened by gRPC with a proxy's headers stays on grpc-go's native
// transport (REST on it gets 415, as direct), which run --proxy's own
// server uses so that gRPC behind its proxy costs what it costs direct;
// a REST-first connection still carries both.
func TestH2ProxiedGRPCNative(t *testing.T) {
	c := startClient(t, server.Config{ProxiedGRPCNative: true})
	o := dialOne(t, c.addr)
	var v pb.Version
	if code, msg := o.grpc(pb.MeteoriteLandingsService_GetVersion_FullMethodName, &pb.EmptyRequest{}, &v, "X-Forwarded-For", "203.0.113.9"); code != "0" {
		t.Fatalf("gRPC first with X-Forwarded-For: grpc-status %q %q", code, msg)
	}
	if s := o.rest(api.PathVersion); s != http.StatusUnsupportedMediaType {
		t.Errorf("REST after proxied gRPC with ProxiedGRPCNative: %d, want grpc-go's 415 (the native transport)", s)
	}
	dialOne(t, c.addr).mixed()
}

// TestH2RefusalEndsItsStreamOnly: a POST refused on an HTTP/2 connection
// (over the size limit, declared or once inflated) ends its own stream;
// the connection's other streams (an answer being read) go on and new
// requests are served on it. Connection: close, which net/http's HTTP/2
// server turns into a GOAWAY, is for HTTP/1.x answers only.
func TestH2RefusalEndsItsStreamOnly(t *testing.T) {
	const maxBody = 64 << 10
	addr := servertest.Start(t, server.Config{MaxBody: maxBody})
	o := dialOne(t, addr)

	// A streamed answer in flight, read a little.
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+api.PathStream, nil)
	stream, err := o.cc.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	first := make([]byte, 100)
	if _, err := io.ReadFull(stream.Body, first); err != nil {
		t.Fatal(err)
	}

	big := bytes.Repeat([]byte(" "), maxBody+1)
	resp, body := o.do(http.MethodPost, api.PathList, big, "Content-Type", api.TypeJSON)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("an oversize POST: %s %q, want 413", resp.Status, body)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(append(append([]byte("["), big...), ']'))
	_ = zw.Close()
	resp, body = o.do(http.MethodPost, api.PathList, gz.Bytes(), "Content-Type", api.TypeJSON, "Content-Encoding", "gzip")
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a POST over the limit once inflated: %s %q, want 413", resp.Status, body)
	}
	if st := o.cc.State(); st.Closing || st.Closed {
		t.Errorf("after the refusals the connection is closing (GOAWAY): %+v", st)
	}

	rest, err := io.ReadAll(stream.Body)
	if err != nil {
		t.Fatalf("the stream in flight on the same connection: %v after %d bytes", err, len(first)+len(rest))
	}
	checkLandings(t, "the stream in flight", decodeNDJSON(t, append(first, rest...)))
	if s := o.rest(api.PathVersion); s != http.StatusOK {
		t.Errorf("a GET after the refusals: %d", s)
	}
	if !strings.Contains(string(body), "limit") {
		t.Errorf("the refusal does not say why: %q", body)
	}
}

// TestH2BudgetRefusalKeepsHealthyConnection: two connections whose
// clients read every answer ask for more large answers at once than their
// lanes hold (calls wait for room on each), while the server's budget is
// spent: a capacity probe's shape. A call the budget refuses gets 503 on
// its own stream; no connection is closed, and every other call is served.
// (A connection is closed only when its client stopped reading: the
// stalled-client tests in memattack_test.go and h2cattack_test.go.)
func TestH2BudgetRefusalKeepsHealthyConnection(t *testing.T) {
	addr := servertest.Start(t, server.Config{MemoryLimit: 64 << 20}) // a 16 MiB budget
	const conns, calls = 2, 48
	rounds := 2
	if testmode.UnderRace(t, "one round: the race detector's slowness spends the budget in it") {
		rounds = 1
	}
	path := api.PathList
	timing.Retry(t, 0, func(attempt int) []string {
		var mu sync.Mutex
		codes := map[string]int{}
		var wg sync.WaitGroup
		for range conns {
			o := dialOne(t, addr)
			wg.Go(func() {
				for range rounds {
					var round sync.WaitGroup
					for range calls {
						round.Go(func() {
							req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
							req.Header.Set("Accept-Encoding", "gzip") // a larger charge each: fewer fill a lane
							what := ""
							resp, err := o.cc.RoundTrip(req)
							if err == nil {
								_, err = io.Copy(io.Discard, resp.Body)
								resp.Body.Close()
								what = resp.Status
							}
							if err != nil {
								what = "error: " + err.Error()
							}
							mu.Lock()
							codes[what]++
							mu.Unlock()
						})
					}
					round.Wait()
				}
				if st := o.cc.State(); st.Closed || st.Closing {
					mu.Lock()
					codes["connection closing at the end"]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		t.Logf("timing: attempt %d: %v (load %.1f)", attempt, codes, timing.LoadAverage())
		for what, n := range codes {
			if what != "200 OK" && what != "503 Service Unavailable" {
				t.Errorf("%d calls: %s, want each served or refused on its own stream", n, what)
			}
		}
		if codes["503 Service Unavailable"] == 0 {
			return []string{"no call was refused: the budget was never spent, so nothing was tested"}
		}
		return nil
	})
}
