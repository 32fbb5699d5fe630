package wire

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// handshakes records TLS handshake times in nanoseconds, 1 µs to 1 min.
type handshakes struct {
	h     *hdrhistogram.Histogram
	sumNS float64
}

// tlsHandshake runs the TLS client handshake on the counted connection cc,
// explicitly and timed, so its bytes are counted and its time recorded
// apart from the calls'. ServerName defaults to the host of addr; a
// server that does not agree to the only ALPN protocol offered (h2 for
// gRPC) is an error, as grpc-go's own TLS credentials make it.
func (d *Dialer) tlsHandshake(ctx context.Context, cc net.Conn, addr string) (net.Conn, error) {
	cfg := d.TLS
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		cfg = cfg.Clone()
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	tc := tls.Client(cc, cfg)
	t0 := time.Now()
	if err := tc.HandshakeContext(ctx); err != nil {
		cc.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	took := time.Since(t0)
	if p := tc.ConnectionState().NegotiatedProtocol; len(cfg.NextProtos) == 1 && cfg.NextProtos[0] == "h2" && p != "h2" {
		tc.Close()
		return nil, fmt.Errorf("TLS with %s: the server did not agree to ALPN h2 (got %q): not a gRPC server over TLS", addr, p)
	} else if p != "" && !slices.Contains(cfg.NextProtos, p) {
		tc.Close()
		return nil, fmt.Errorf("TLS with %s: unexpected ALPN protocol %q", addr, p)
	}
	d.mu.Lock()
	if d.hs.h == nil {
		d.hs.h = hdrhistogram.New(1e3, int64(time.Minute), 3)
	}
	_ = d.hs.h.RecordValue(took.Nanoseconds())
	d.hs.sumNS += float64(took.Nanoseconds())
	d.mu.Unlock()
	return tc, nil
}

// Handshakes returns a copy of the TLS handshake times so far, in
// nanoseconds, and their sum; nil when there was none (no TLS).
func (d *Dialer) Handshakes() (*hdrhistogram.Histogram, float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.hs.h == nil || d.hs.h.TotalCount() == 0 {
		return nil, 0
	}
	return hdrhistogram.Import(d.hs.h.Export()), d.hs.sumNS
}
