package plan

import (
	"crypto/tls"
	"fmt"
	"slices"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// alpn is the ALPN protocol each protocol's client offers over TLS at
// HTTP version v (a cell's http_version, "" for HTTP/1.1): h2 for gRPC,
// but h3 at HTTP/3; the others follow the version (call.ALPN). The server routes
// an h2 connection by its first request's content-type.
func alpn(p api.Protocol, v string) []string {
	if p == api.GRPC && v != call.HTTP3 {
		return []string{"h2"}
	}
	return call.ALPN(v)
}

// tlsOnly reports whether every cell is over TLS: then the health check and
// the /metrics scrape go over TLS too. With plaintext cells among them the
// target must serve both (serve --tls-allow-plaintext) and those stay
// plaintext.
func (c Config) TLSOnly() bool { return len(c.TLS) > 0 && !slices.Contains(c.TLS, false) }

// validateTLS checks the TLS sweep.
func (c Config) validateTLS() error {
	if len(c.TLS) > 2 || (len(c.TLS) == 2 && c.TLS[0] == c.TLS[1]) {
		return fmt.Errorf("TLS conditions %v: want plaintext, TLS, or both once", c.TLS)
	}
	return nil
}

// ClientTLS is the client TLS configuration of protocol p at HTTP version
// v ("" or "1.1": HTTP/1.1; "2": HTTP/2).
func (c Config) ClientTLS(p api.Protocol, v string) *tls.Config {
	cfg := &tls.Config{}
	if c.TLSConfig != nil {
		cfg = c.TLSConfig.Clone()
	}
	cfg.NextProtos = alpn(p, v)
	return cfg
}
