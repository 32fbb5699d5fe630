package plan

import (
	"crypto/tls"
	"fmt"
	"slices"

	"github.com/meteorbench/meteorbench/api"
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
func (c Config) TLSOnly() bool { return len(c.TLS) > 0 && !slices.Contains(c.TLS, false) }

// validateTLS checks the TLS sweep.
func (c Config) validateTLS() error {
	if len(c.TLS) > 2 || (len(c.TLS) == 2 && c.TLS[0] == c.TLS[1]) {
		return fmt.Errorf("TLS conditions %v: want plaintext, TLS, or both once", c.TLS)
	}
	return nil
}

// clientTLS is the client TLS configuration for a protocol.
func (c Config) ClientTLS(p api.Protocol) *tls.Config {
	cfg := &tls.Config{}
	if c.TLSConfig != nil {
		cfg = c.TLSConfig.Clone()
	}
	cfg.NextProtos = alpn(p)
	return cfg
}
