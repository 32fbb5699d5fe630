package restcall

import (
	"context"
	"crypto/tls"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// Transports3 are the HTTP/3 transports of o: HTTP/2's connection policy
// (o.Connections QUIC connections, default 1, every worker's calls
// multiplexed over them round-robin), each over a UDP socket of o's
// counted dialer (wire.Dialer.ListenUDP: through the packet link when the
// cell has one), TLS with the dialer's configuration (ALPN h3), the
// transport's own compression off. The bytes counted are the UDP
// payloads: QUIC's packets, encrypted, with their headers.
func Transports3(o call.Options) []*http3.Transport {
	n := max(o.Connections, 1)
	trs := make([]*http3.Transport, n)
	for i := range trs {
		trs[i] = &http3.Transport{
			TLSClientConfig:    o.Dialer.TLS,
			DisableCompression: true,
			Dial: func(ctx context.Context, addr string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error) {
				pc, raddr, err := o.Dialer.ListenUDP(ctx, addr)
				if err != nil {
					return nil, err
				}
				tr := &quic.Transport{Conn: pc}
				conn, err := tr.DialEarly(ctx, raddr, tlsCfg, cfg)
				if err != nil {
					tr.Close()
					pc.Close()
					return nil, err
				}
				go func() { // the socket lives as long as its connection
					<-conn.Context().Done()
					tr.Close()
					pc.Close()
				}()
				return conn, nil
			},
		}
	}
	return trs
}
