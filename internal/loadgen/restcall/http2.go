package restcall

import (
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// Transports are the transports of a client of o's HTTP version.
//
// HTTP/1.1 (the default): one transport, Transport(o), one connection per
// worker unless o names a number.
//
// HTTP/2: the gRPC client's connection policy, so the two compare at the
// same number of connections: o.Connections connections (default 1), one
// transport each, every worker's calls multiplexed over them round-robin
// (grpccall: one ClientConn per connection). Each transport holds to its
// one connection (MaxConnsPerHost 1, StrictMaxConcurrentRequests): calls
// past the server's SETTINGS_MAX_CONCURRENT_STREAMS wait for a stream, as
// grpc-go's do, instead of opening another connection. In plaintext it is
// h2c with prior knowledge; under TLS the counted dialer does the
// handshake (its ALPN must offer h2: call.ALPN), and the transport speaks
// HTTP/2 over the connection it returns. The bytes counted are the HTTP/2
// frames on the wire, as for gRPC.
func Transports(o call.Options) []*http.Transport {
	if !o.IsHTTP2() {
		return []*http.Transport{Transport(o)}
	}
	n := o.Connections
	if n == 0 {
		n = 1
	}
	trs := make([]*http.Transport, n)
	for i := range trs {
		trs[i] = Transport2(o)
	}
	return trs
}

// Transport2 is one HTTP/2 connection's transport (see Transports): h2c
// with prior knowledge over o's counted dialer (which makes it TLS when
// it is), the transport's own compression off, no proxy.
func Transport2(o call.Options) *http.Transport {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true) // over the dialer's connection, TLS or not
	return &http.Transport{
		DialContext:        o.Dialer.DialContext,
		Protocols:          &p,
		MaxConnsPerHost:    1,
		MaxIdleConns:       1,
		IdleConnTimeout:    90 * time.Second,
		DisableCompression: true,
		HTTP2: &http.HTTP2Config{
			// Queue for a stream rather than open a second connection.
			StrictMaxConcurrentRequests: true,
		},
	}
}

// transport is an HTTP/1.1, HTTP/2 or HTTP/3 transport.
type transport interface {
	http.RoundTripper
	CloseIdleConnections()
}

// roundTrippers are a client's transports, picked round-robin.
type roundTrippers struct {
	trs  []transport
	next atomic.Uint64
}

// newRoundTrippers are o's transports: Transports(o), or HTTP/3's.
func newRoundTrippers(o call.Options) *roundTrippers {
	r := &roundTrippers{}
	if o.HTTPVersion() == call.HTTP3 {
		for _, tr := range Transports3(o) { // http3.go
			r.trs = append(r.trs, tr)
		}
		return r
	}
	for _, tr := range Transports(o) {
		r.trs = append(r.trs, tr)
	}
	return r
}

// pick is the next transport.
func (r *roundTrippers) pick() transport {
	if len(r.trs) == 1 {
		return r.trs[0]
	}
	return r.trs[r.next.Add(1)%uint64(len(r.trs))]
}

// close closes every transport's connections (and HTTP/3's sockets).
func (r *roundTrippers) close() {
	for _, tr := range r.trs {
		tr.CloseIdleConnections()
		if c, ok := tr.(io.Closer); ok {
			c.Close()
		}
	}
}

// RoundTripper is o's transports (Transports) as one http.RoundTripper,
// round-robin over HTTP/2's connections, for another adapter over HTTP
// (webcall) to give its http.Client; closeIdle closes their connections.
func RoundTripper(o call.Options) (rt http.RoundTripper, closeIdle func()) {
	r := newRoundTrippers(o)
	return roundTripFunc(func(req *http.Request) (*http.Response, error) { return r.pick().RoundTrip(req) }), r.close
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
