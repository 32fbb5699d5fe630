package session

import (
	"net/http"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
)

// dialer is a cell's counted dialer, over TLS in a TLS cell.
func (r *Session) dialer(spec plan.Spec) *wire.Dialer {
	d := &wire.Dialer{}
	if spec.TLS || spec.HTTPVersion == call.HTTP3 { // QUIC is always TLS
		d.TLS = r.cfg.ClientTLS(spec.Protocol, spec.HTTPVersion)
	}
	return d
}

// controlOverTLS sends the health checks and the /metrics scrapes over
// TLS (ALPN http/1.1) when every cell is over TLS. The URLs stay http://:
// the dialer makes the connection TLS.
func (r *Session) controlOverTLS() {
	if !r.cfg.TLSOnly() {
		return
	}
	r.dialOverTLS(r.health.Transport.(*http.Transport))
}

// dialOverTLS makes a control transport's connections TLS (ALPN http/1.1).
func (r *Session) dialOverTLS(tr *http.Transport) {
	tr.DialContext = (&wire.Dialer{TLS: r.cfg.ClientTLS(api.REST, "")}).DialContext
}

// handshakeLatency is the cell's TLS handshake times; nil without TLS.
func handshakeLatency(d *wire.Dialer) *results.Latency {
	h, sum := d.Handshakes()
	if h == nil {
		return nil
	}
	l := engine.Latency(h, sum)
	return &l
}
