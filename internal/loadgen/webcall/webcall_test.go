package webcall_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/loadgentest"
	"github.com/meteorbench/meteorbench/internal/loadgen/webcall"
	"github.com/meteorbench/meteorbench/internal/loadgen/webcall/webtest"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/testmode"
)

// answerSize is the protobuf size of a scenario's answer (for a stream,
// its messages' sum): what the bytes received must cover.
func answerSize(t *testing.T, sc api.Scenario) int {
	t.Helper()
	ls, err := data.LandingsN(data.Count)
	if err != nil {
		t.Fatal(err)
	}
	switch sc {
	case api.Small:
		return proto.Size(&pb.Version{ApiVersion: data.Version})
	case api.Large:
		return proto.Size(data.ProtoList(ls))
	case api.Stream:
		n := 0
		for _, l := range ls {
			n += proto.Size(l.Proto())
		}
		return n
	}
	return proto.Size(&pb.StatusResponse{Status: data.Success})
}

// TestEveryCell calls every scenario over every web protocol and HTTP
// version, plaintext and TLS, with 4 workers, 3 calls each: every answer
// decodes and validates, the server saw the HTTP version asked for, the
// connections follow the policy (HTTP/1.1: one per worker; HTTP/2: 1),
// and the bytes counted cover the answers' protobuf without being far
// over them.
func TestEveryCell(t *testing.T) {
	workers, calls := 4, 3
	modes := []bool{false, true}
	if testmode.Short(t, "plaintext only, 2 workers of 2 calls (TLS is wire.Dialer's, raced in wire's and session's tests; the normal step runs it here)") {
		modes, workers, calls = modes[:1], 2, 2
	}
	for _, tlsOn := range modes {
		srv := webtest.Start(t, webtest.Config{TLS: tlsOn})
		for _, p := range webcall.Protocols() {
			for _, v := range []string{call.HTTP11, call.HTTP2} {
				for _, sc := range api.Scenarios() {
					name := string(p) + "/" + v + "/" + string(sc)
					if tlsOn {
						name += "/tls"
					}
					t.Run(name, func(t *testing.T) {
						d := &wire.Dialer{}
						if tlsOn {
							d.TLS = srv.TLSConfig.Clone()
							d.TLS.NextProtos = call.ALPN(v)
						}
						c, err := webcall.NewClient(p, call.Options{Target: srv.Addr, Workers: workers, Dialer: d, Settings: map[string]string{call.SettingHTTPVersion: v}, Token: "tok"})
						if err != nil {
							t.Fatal(err)
						}
						defer c.Close()
						var before [3]int64
						before[1], before[2] = srv.Proto[1].Load(), srv.Proto[2].Load()
						callers, err := webtest.Callers(c, sc, workers)
						if err == nil {
							err = webtest.Load(callers, sc, calls, true)
						}
						if err != nil {
							t.Fatal(err)
						}
						wantMajor, otherMajor := 1, 2
						if v == call.HTTP2 {
							wantMajor, otherMajor = 2, 1
						}
						if got := srv.Proto[wantMajor].Load() - before[wantMajor]; got != int64(workers*calls) {
							t.Errorf("%d requests over HTTP/%d, want %d", got, wantMajor, workers*calls)
						}
						if got := srv.Proto[otherMajor].Load() - before[otherMajor]; got != 0 {
							t.Errorf("%d requests over HTTP/%d", got, otherMajor)
						}
						st := d.Stats()
						wantDials := int64(1)
						if v == call.HTTP11 {
							wantDials = int64(workers)
						}
						if st.Dials > wantDials || st.Dials < 1 {
							t.Errorf("%d connections, want at most %d", st.Dials, wantDials)
						}
						size := int64(answerSize(t, sc)) * int64(workers*calls)
						// Per call: headers, 5-byte prefixes (the stream's 1000),
						// trailers, HTTP/2 frame headers; TLS records add ~2%.
						over := int64(workers*calls*2048) + size/10
						if sc == api.Stream {
							over += int64(workers*calls) * 1000 * (5 + 9) // a prefix and (HTTP/2) a DATA frame a message
						}
						if tlsOn {
							over += size/20 + 8192*st.Dials
							if sc == api.Stream {
								over += int64(workers*calls) * 1000 * 29 // a TLS record a message (flushed one by one)
							}
						}
						if st.Received < size || st.Received > size+over {
							t.Errorf("received %d bytes for %d bytes of answers (at most %d over)", st.Received, size, over)
						}
						if sc == api.Post && st.Sent < int64(proto.Size(mustList(t)))*int64(workers*calls) {
							t.Errorf("sent %d bytes: less than the posts' records", st.Sent)
						}
						t.Logf("%d connections, sent %d B, received %d B (answers %d B)", st.Dials, st.Sent, st.Received, size)
					})
				}
			}
		}
	}
}

func mustList(t *testing.T) *pb.MeteoriteLandingList {
	ls, err := data.LandingsN(data.Count)
	if err != nil {
		t.Fatal(err)
	}
	return data.ProtoList(ls)
}

// TestBadAnswers: each bad answer, over HTTP/1.1 and HTTP/2, gets its
// class, and the server goes on serving.
func TestBadAnswers(t *testing.T) {
	webtest.RunBadAnswers(t, func(t *testing.T, tc webtest.BadAnswer, o call.Options, sc api.Scenario) {
		c, a := loadgentest.Open(t, newClient, tc.Protocol, o, sc)
		defer c.Close()
		if got, err := loadgentest.Classify(a); got != tc.Want {
			t.Fatalf("class %q (%v), want %q", got, err, tc.Want)
		}
	})
}

// TestServerCodes: a code the handler fails with reaches the class
// grpc-<Code> over both protocols and every scenario.
func TestServerCodes(t *testing.T) {
	srv := webtest.Start(t, webtest.Config{Code: connect.CodeResourceExhausted})
	for _, p := range webcall.Protocols() {
		for _, sc := range api.Scenarios() {
			c, a := loadgentest.Open(t, newClient, p, call.Options{Target: srv.Addr, Workers: 1, Dialer: &wire.Dialer{}, Settings: map[string]string{call.SettingHTTPVersion: call.HTTP2}}, sc)
			if got, err := loadgentest.Classify(a); got != results.GRPCClass("ResourceExhausted") {
				t.Errorf("%s %s: class %q (%v)", p, sc, got, err)
			}
			c.Close()
		}
	}
}

// TestRecordsAndToken: a named size reaches the server (the
// meteorbench-records header) and the answer is checked against it.
func TestRecordsAndToken(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := webtest.Start(t, webtest.Config{Raw: func(_ http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		seen = append(seen, r.Header.Get(api.MetadataRecords)+"|"+r.Header.Get("Authorization"))
		mu.Unlock()
		return false
	}})
	for _, p := range webcall.Protocols() {
		for _, sc := range []api.Scenario{api.Large, api.Stream, api.Post} {
			c, err := webcall.NewClient(p, call.Options{Target: srv.Addr, Workers: 1, Dialer: &wire.Dialer{}, Records: 7, Token: "tok"})
			if err != nil {
				t.Fatal(err)
			}
			a, _ := c.Caller(sc)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if _, err := a.Call(ctx); err != nil {
				t.Errorf("%s %s: %v", p, sc, err)
			}
			cancel()
			c.Close()
		}
	}
	for i, s := range seen {
		want := "7|Bearer tok"
		if i%3 == 2 { // post: no size header
			want = "|Bearer tok"
		}
		if s != want {
			t.Errorf("request %d carried %q, want %q", i, s, want)
		}
	}
}

func TestUnknown(t *testing.T) {
	o := call.Options{Target: "127.0.0.1:1", Workers: 1, Dialer: &wire.Dialer{}}
	if _, err := webcall.NewClient("grpc-webb", o); err == nil || !strings.Contains(err.Error(), "unknown protocol") {
		t.Errorf("unknown protocol: %v", err)
	}
	o.Settings = map[string]string{call.SettingHTTPVersion: "4"}
	if _, err := webcall.NewClient(webcall.Connect, o); err == nil {
		t.Error("HTTP version 4 accepted")
	}
}

// newClient is webcall.NewClient as an engine's constructor.
func newClient(p api.Protocol, o call.Options) (call.Client, error) {
	return webcall.NewClient(p, o)
}
