package restcall_test

import (
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/restcall"
	"github.com/meteorbench/meteorbench/internal/loadgen/webcall/webtest"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/testmode"
)

// TestHTTP2 calls every scenario of both encodings over HTTP/2 (h2c with
// prior knowledge, and ALPN h2 under TLS) against a plain net/http server:
// every answer decodes and validates, the server saw HTTP/2 only, the
// workers shared the one connection of the gRPC client's policy, and the
// bytes counted cover the answers.
func TestHTTP2(t *testing.T) {
	modes, calls := []bool{false, true}, 3
	// Under the race detector the 16 cells took 10 CPU-s.
	if testmode.Short(t, "h2c only, one call a worker (TLS is wire.Dialer's, raced in wire's and session's tests; the normal step runs it here)") {
		modes, calls = modes[:1], 1
	}
	for _, tlsOn := range modes {
		srv := webtest.Start(t, webtest.Config{TLS: tlsOn})
		for _, protobuf := range []bool{false, true} {
			for _, sc := range api.Scenarios() {
				name := map[bool]string{false: "h2c", true: "tls"}[tlsOn] + "/" + map[bool]string{false: "json", true: "protobuf"}[protobuf] + "/" + string(sc)
				t.Run(name, func(t *testing.T) {
					d := &wire.Dialer{}
					if tlsOn {
						d.TLS = srv.TLSConfig.Clone()
						d.TLS.NextProtos = call.ALPN(call.HTTP2)
					}
					const workers = 4
					o := call.Options{Target: srv.Addr, Workers: workers, Dialer: d, Settings: map[string]string{call.SettingHTTPVersion: call.HTTP2}}
					c := newClient(t, protobuf, o)
					defer c.Close()
					before1 := srv.Proto[1].Load()
					callers, err := webtest.Callers(c, sc, workers)
					if err == nil {
						err = webtest.Load(callers, sc, calls, true)
					}
					if err != nil {
						t.Fatal(err)
					}
					st := d.Stats()
					if st.Dials != 1 {
						t.Errorf("%d connections for %d workers over HTTP/2, want 1 (the gRPC client's policy)", st.Dials, workers)
					}
					if n := srv.Proto[1].Load() - before1; n != 0 {
						t.Errorf("%d requests reached the server over HTTP/1.1", n)
					}
					least := int64(workers * calls * 10) // the smallest answer, "API Version 1.0"
					if sc == api.Large || sc == api.Stream {
						least = int64(workers * calls * 90_000) // 1000 records: about 98 KB as protobuf
					}
					if st.Received < least || st.Sent <= 0 {
						t.Errorf("bytes counted: sent %d, received %d, want received >= %d", st.Sent, st.Received, least)
					}
				})
			}
		}
	}
}

// TestHTTPVersionBad: a version other than 1.1, 2 or 3 is refused.
func TestHTTPVersionBad(t *testing.T) {
	_, err := restcall.NewJSON(call.Options{Target: "127.0.0.1:1", Workers: 1, Dialer: &wire.Dialer{}, Settings: map[string]string{call.SettingHTTPVersion: "4"}})
	if err == nil {
		t.Fatal("HTTP version 4 accepted")
	}
}
