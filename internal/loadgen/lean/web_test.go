package lean_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/lean"
	"github.com/meteorbench/meteorbench/internal/loadgen/loadgentest"
	"github.com/meteorbench/meteorbench/internal/loadgen/webcall"
	"github.com/meteorbench/meteorbench/internal/loadgen/webcall/webtest"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/testmode"
)

// webCell is a protocol over an HTTP version.
type webCell struct {
	p api.Protocol
	v string
}

// webCells are the cells of the web protocols and REST over HTTP/2 the
// lean engine serves: all of them.
var webCells = []webCell{
	{api.REST, call.HTTP2}, {api.RESTProtobuf, call.HTTP2},
	{webcall.GRPCWeb, call.HTTP11}, {webcall.GRPCWeb, call.HTTP2},
	{webcall.Connect, call.HTTP11}, {webcall.Connect, call.HTTP2},
}

// webLoad makes calls calls on each of workers callers of an engine's
// client of a cell, and returns the bytes counted, after as many calls to
// warm up (and open the connections), and the connections opened in all.
func webLoad(t *testing.T, open func(api.Protocol, call.Options) (call.Client, error), srv *webtest.Server, c webCell, sc api.Scenario, workers, calls int) (wire.Stats, int64) {
	t.Helper()
	d := &wire.Dialer{}
	if srv.TLSConfig != nil {
		d.TLS = srv.TLSConfig.Clone()
		d.TLS.NextProtos = call.ALPN(c.v)
	}
	cl, err := open(c.p, call.Options{Target: srv.Addr, Workers: workers, Dialer: d, Token: "tok", Settings: map[string]string{call.SettingHTTPVersion: c.v}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	callers, err := webtest.Callers(cl, sc, workers)
	if err == nil {
		err = webtest.Load(callers, sc, calls, false) // as many as measured: the connections grow here
	}
	if err != nil {
		t.Fatal(err)
	}
	before := d.Stats()
	if err := webtest.Load(callers, sc, calls, false); err != nil {
		t.Fatal(err)
	}
	after := d.Stats()
	return after.Sub(before), after.Dials
}

// TestWebCells: every scenario of every web cell succeeds over the lean
// engine, plaintext and over TLS, 4 callers at once, answered over the
// HTTP version asked for, and its bytes per call agree with the standard
// engine's (connect-go's and net/http's clients) within 3% (or the 48
// bytes of the timeout header it leaves out and a TLS record): the same requests and
// answers, framed the same. Small calls over HTTP/2 are
// only logged: control frames (window updates, pings), which the two
// clients send at different moments, are most of their bytes.
func TestWebCells(t *testing.T) {
	modes, scenarios := []bool{false, true}, api.Scenarios()
	// Under the race detector (CI's race step runs -short) the cells over
	// TLS take minutes; their TLS is wire.Dialer's, which the wire and
	// session TLS tests run under it too. A large call takes the small
	// call's path with more records; a stream of 1000 flushed messages is
	// the slowest cell. The normal step runs them all.
	workers, calls := 4, 5
	if testmode.Short(t, "plaintext small and post calls only, 2 workers of 2 calls (TLS, large and stream cells run in the normal step; webcall's TestEveryCell races a stream of each)") {
		modes, scenarios = modes[:1], []api.Scenario{api.Small, api.Post}
		workers, calls = 2, 2
	}
	for _, tlsOn := range modes {
		srv := webtest.Start(t, webtest.Config{TLS: tlsOn})
		for _, c := range webCells {
			for _, sc := range scenarios {
				name := string(c.p) + "/" + c.v + "/" + string(sc)
				if tlsOn {
					name += "/tls"
				}
				t.Run(name, func(t *testing.T) {
					calls := calls
					if sc == api.Stream {
						calls = 2 // 1000 messages a call, each flushed by the test server: slow
					}
					major := 1
					if c.v == call.HTTP2 {
						major = 2
					}
					other := srv.Proto[3-major].Load()
					// net/http's HTTP/1.1 transport may open a connection more
					// than the workers (a dial it started while a connection
					// came back idle), whose handshake or first read (TLS 1.3
					// session tickets) may then count: an attempt in which
					// either engine opened more connections than its policy
					// (HTTP/1.1: one a worker; HTTP/2: one), or any while
					// measuring, is logged and made again, 3 attempts at most.
					conns := int64(workers)
					if c.v == call.HTTP2 {
						conns = 1
					}
					for attempt := 1; ; attempt++ {
						l, ld := webLoad(t, lean.New, srv, c, sc, workers, calls)
						s, sd := webLoad(t, standard, srv, c, sc, workers, calls)
						n := float64(workers * calls)
						t.Logf("attempt %d: bytes per call: lean %.1f sent + %.1f received, standard %.1f + %.1f; connections: lean %d, standard %d (while measuring %d, %d)",
							attempt, float64(l.Sent)/n, float64(l.Received)/n, float64(s.Sent)/n, float64(s.Received)/n, ld, sd, l.Dials, s.Dials)
						if l.Dials != 0 || s.Dials != 0 || ld > conns || sd > conns {
							if attempt == 3 {
								t.Fatal("connections past the policy, or opened while measuring, 3 attempts in a row")
							}
							continue
						}
						if sc == api.Small && c.v == call.HTTP2 {
							break
						}
						// The lean clients leave out the timeout header connect-go
						// sends (grpc-timeout, connect-timeout-ms), and write a request in
						// one TLS record where net/http writes two: up to 48 bytes.
						// Over TLS, a connection net/http opened in the warm-up
						// but first used while measuring brings its TLS 1.3
						// session ticket along (hundreds of bytes, most of a
						// small call's): there the standard engine may only be
						// heavier.
						lt, st := l.Sent+l.Received, s.Sent+s.Received
						slack := 48 * int64(n)
						if tlsOn && sc == api.Small {
							slack = st
						}
						if r := float64(lt)/float64(st) - 1; (r > 0.03 || r < -0.03) && (lt > st || st-lt > slack) {
							t.Errorf("bytes lean %d, standard %d (%+.1f%%)", lt, st, 100*r)
						}
						break
					}
					if n := srv.Proto[3-major].Load() - other; n != 0 {
						t.Errorf("%d requests over HTTP/%d", n, 3-major)
					}
				})
			}
		}
	}
}

// TestWebBadAnswers: each bad answer of the table the standard engine's
// tests use (webtest.BadAnswers), over HTTP/1.1 and HTTP/2, gets the same
// class from the lean engine, and the next good call on the same client
// succeeds.
func TestWebBadAnswers(t *testing.T) {
	webtest.RunBadAnswers(t, func(t *testing.T, tc webtest.BadAnswer, o call.Options, sc api.Scenario) {
		call1 := func(token string, want results.ErrorClass) {
			o.Token = token
			c, a := loadgentest.Open(t, lean.New, tc.Protocol, o, sc)
			defer c.Close()
			if cl, err := loadgentest.Classify(a); cl != want {
				t.Errorf("class %q (%v), want %q", cl, err, want)
			}
		}
		call1("", tc.Want)
		call1("tok", "")
	})
}

// TestWebServerCodes: a code the handler fails with is its class over the
// lean engine too, every web protocol, scenario and HTTP version.
func TestWebServerCodes(t *testing.T) {
	srv := webtest.Start(t, webtest.Config{Code: 8}) // ResourceExhausted
	for _, c := range webCells[2:] {
		for _, sc := range api.Scenarios() {
			cl, a := loadgentest.Open(t, lean.New, c.p, call.Options{Target: srv.Addr, Workers: 1, Dialer: &wire.Dialer{}, Settings: map[string]string{call.SettingHTTPVersion: c.v}}, sc)
			if got, err := loadgentest.Classify(a); got != results.GRPCClass("ResourceExhausted") {
				t.Errorf("%s/%s %s: class %q (%v)", c.p, c.v, sc, got, err)
			}
			cl.Close()
		}
	}
}

// TestRESTOverHTTP2BadAnswers: REST over HTTP/2 answers with a bad status
// or media type get the same classes from both engines as over HTTP/1.1.
func TestRESTOverHTTP2BadAnswers(t *testing.T) {
	for _, tc := range []webtest.BadAnswer{
		{Name: "503 with the contract's error", Protocol: api.REST, Write: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":"overloaded"}`))
		}, Want: results.HTTPClass(503)},
		{Name: "a wrong media type", Protocol: api.REST, Write: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`"API Version 1.0"`))
		}, Want: results.ClassInvalid},
		{Name: "a wrong version", Protocol: api.REST, Write: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`"API Version 0.9"`))
		}, Want: results.ClassInvalid},
	} {
		srv := webtest.Start(t, webtest.Config{Raw: func(w http.ResponseWriter, r *http.Request) bool {
			tc.Write(w)
			return true
		}})
		for name, open := range map[string]func(api.Protocol, call.Options) (call.Client, error){"lean": lean.New, "standard": standard} {
			c, a := loadgentest.Open(t, open, tc.Protocol, call.Options{Target: srv.Addr, Workers: 1, Dialer: &wire.Dialer{}, Settings: map[string]string{call.SettingHTTPVersion: call.HTTP2}}, api.Small)
			if got, err := loadgentest.Classify(a); got != tc.Want {
				t.Errorf("%s, %s: class %q (%v), want %q", tc.Name, name, got, err, tc.Want)
			}
			c.Close()
		}
		if srv.Proto[1].Load() != 0 {
			t.Errorf("%s: %d requests over HTTP/1.1", tc.Name, srv.Proto[1].Load())
		}
	}
}

// TestWebStall: a server that sends half an answer and stalls cannot hold
// a lean web call past its deadline (the watchdog's), over either HTTP
// version: the call is a timeout, soon after its deadline.
func TestWebStall(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := webtest.Start(t, webtest.Config{Raw: func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Type", "application/grpc-web+proto")
		w.Write([]byte{0, 0, 0, 0, 17, 0x0a}) // a frame's start
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	}})
	for _, c := range webCells[2:] {
		cl, a := loadgentest.Open(t, lean.New, c.p, call.Options{Target: srv.Addr, Workers: 1, Dialer: &wire.Dialer{}, Settings: map[string]string{call.SettingHTTPVersion: c.v}}, api.Small)
		const timeout = 200 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		t0 := time.Now()
		_, err := a.Call(ctx)
		took := time.Since(t0)
		if got := call.Classify(ctx, err); got != results.ClassTimeout {
			t.Errorf("%s/%s: class %q (%v), want a timeout", c.p, c.v, got, err)
		}
		if took > timeout+time.Second { // the watchdog looks every 5 ms; a loaded machine is slow
			t.Errorf("%s/%s: the call took %v past a deadline of %v", c.p, c.v, took, timeout)
		}
		cancel()
		cl.Close()
	}
}
