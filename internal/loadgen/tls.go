package loadgen

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"slices"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
)

// alpn is the ALPN protocol each protocol's client offers over TLS: the
// server routes h2 to gRPC and http/1.1 to REST.
func alpn(p api.Protocol) []string {
	if p == api.GRPC {
		return []string{"h2"}
	}
	return []string{"http/1.1"}
}

// tlsOnly reports whether every cell is over TLS: then the health check and
// the /metrics scrape go over TLS too. With plaintext cells among them the
// target must serve both (serve --tls-allow-plaintext) and those stay
// plaintext.
func (c Config) tlsOnly() bool { return len(c.TLS) > 0 && !slices.Contains(c.TLS, false) }

// validateTLS checks the TLS sweep.
func (c Config) validateTLS() error {
	if len(c.TLS) > 2 || (len(c.TLS) == 2 && c.TLS[0] == c.TLS[1]) {
		return fmt.Errorf("TLS conditions %v: want plaintext, TLS, or both once", c.TLS)
	}
	return nil
}

// clientTLS is the client TLS configuration for a protocol.
func (c Config) clientTLS(p api.Protocol) *tls.Config {
	cfg := &tls.Config{}
	if c.TLSConfig != nil {
		cfg = c.TLSConfig.Clone()
	}
	cfg.NextProtos = alpn(p)
	return cfg
}

// dialer is a cell's counted dialer, over TLS in a TLS cell.
func (r *runner) dialer(spec cellSpec) *wire.Dialer {
	d := &wire.Dialer{}
	if spec.TLS {
		d.TLS = r.cfg.clientTLS(spec.Protocol)
	}
	return d
}

// controlOverTLS sends the health checks and the /metrics scrapes over
// TLS (ALPN http/1.1) when every cell is over TLS. The URLs stay http://:
// the dialer makes the connection TLS.
func (r *runner) controlOverTLS() {
	if !r.cfg.tlsOnly() {
		return
	}
	r.dialOverTLS(r.health.Transport.(*http.Transport))
}

// dialOverTLS makes a control transport's connections TLS (ALPN http/1.1).
func (r *runner) dialOverTLS(tr *http.Transport) {
	tr.DialContext = (&wire.Dialer{TLS: r.cfg.clientTLS(api.REST)}).DialContext
}

// handshakeLatency is the cell's TLS handshake times; nil without TLS.
func handshakeLatency(d *wire.Dialer) *results.Latency {
	h, sum := d.Handshakes()
	if h == nil {
		return nil
	}
	l := latency(h, sum)
	return &l
}
