package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/qlog"

	"github.com/meteorbench/meteorbench/internal/link/netns"
	"github.com/meteorbench/meteorbench/internal/tlsutil"
)

// listenUDP opens HTTP/3's UDP sockets on the TCP listener's port number:
// on its address, and in the network namespace netNS when set (run's
// packet link). A port taken for UDP costs HTTP/3, not the server: the
// error says so, and nil sockets are returned.
func listenUDP(tcp net.Addr, netNS string) ([]net.PacketConn, error) {
	pc, err := net.ListenPacket("udp", tcp.String())
	if err != nil {
		return nil, fmt.Errorf("HTTP/3 not served: UDP %s: %w", tcp, err)
	}
	pcs := []net.PacketConn{pc}
	if netNS != "" {
		ns, err := netns.Open(netNS)
		if err == nil {
			err = ns.Do(func() error {
				p, err := net.ListenPacket("udp4", ":"+strconv.Itoa(tcp.(*net.TCPAddr).Port))
				if err == nil {
					pcs = append(pcs, p)
				}
				return err
			})
		}
		if err != nil {
			pc.Close()
			return nil, fmt.Errorf("--netns %s: HTTP/3: %w", netNS, err)
		}
	}
	return pcs, nil
}

// http3TLS is HTTP/3's TLS configuration: the server's certificate, or a
// self-signed one for host (and the loopback addresses) when it has none;
// QUIC has no plaintext.
func (s *Server) http3TLS(host string) (*tls.Config, error) {
	if s.cfg.TLS != nil {
		return http3.ConfigureTLSConfig(s.cfg.TLS.Clone()), nil
	}
	cert, _, err := tlsutil.SelfSigned(host)
	if err != nil {
		return nil, fmt.Errorf("HTTP/3's self-signed certificate: %w", err)
	}
	return http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}), nil
}

// serveHTTP3 serves REST, gRPC-Web, Connect and gRPC (connect-go's
// handlers speak all three: the contract's methods, as run --proto grpc
// --http-version 3 calls them; grpc-go's own services, health and
// reflection, are HTTP/2 only) over HTTP/3 on pcs until ctx is done, then
// drains within Config.ShutdownTimeout, and closes pcs.
func (s *Server) serveHTTP3(ctx context.Context, pcs []net.PacketConn, tlsCfg *tls.Config) error {
	hs := &http3.Server{
		Handler:   s.rest,
		TLSConfig: tlsCfg,
		QUICConfig: &quic.Config{
			MaxIdleTimeout:        s.cfg.IdleTimeout,
			MaxIncomingStreams:    int64(s.cfg.MaxConcurrentStreams),
			MaxIncomingUniStreams: 16,
			// With $QLOGDIR set, a qlog file per connection there
			// (congestion window, losses, probe timeouts: the sender's
			// side of an answer); nothing otherwise.
			Tracer: qlog.DefaultConnectionTracer,
		},
		MaxHeaderBytes: s.cfg.MaxHeaderBytes,
		IdleTimeout:    s.cfg.IdleTimeout,
		Logger:         slog.New(slog.DiscardHandler),
	}
	done := make(chan error, len(pcs))
	for _, pc := range pcs {
		go func() { done <- hs.Serve(pc) }()
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	hs.Close()
	for range pcs {
		if e := <-done; e != nil && !errors.Is(e, http.ErrServerClosed) && !errors.Is(e, quic.ErrServerClosed) && !errors.Is(e, net.ErrClosed) {
			err = errors.Join(err, e)
		}
	}
	for _, pc := range pcs {
		pc.Close()
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("server: HTTP/3: %w", err)
	}
	return nil
}
