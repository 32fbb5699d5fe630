package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/soheilhy/cmux"
)

// ALPN protocols offered, in the server's order of preference. Go's TLS
// server picks the first of these the client offers: a client that offers
// h2 gets gRPC. REST is HTTP/1.1 only (net/http serves HTTP/2 only on a
// *tls.Conn it terminated itself, golang/go#55076), so REST clients must
// offer http/1.1 alone (curl --http1.1) or no ALPN at all.
const (
	alpnH2    = "h2"
	alpnHTTP1 = "http/1.1"
)

// muxer splits one listener into the gRPC and the HTTP/1.1 listeners:
// cmux in plaintext, the ALPN router with TLS.
type muxer interface {
	Serve() error
	Close()
}

// listeners splits ln by protocol: cmux on plaintext (newCmux), the ALPN
// router with TLS, or both on one port with TLSAllowPlaintext (cmux first
// tells a TLS ClientHello from a plaintext preface).
func (s *Server) listeners(ln net.Listener) (muxer, net.Listener, net.Listener) {
	if s.cfg.TLS == nil {
		return s.newCmux(ln, nil)
	}
	cfg := s.cfg.TLS.Clone()
	// Server preference: a client that offers http/1.1 (curl, browsers,
	// net/http) speaks REST; one that offers only h2 (every gRPC client)
	// speaks gRPC. REST cannot be served over h2 on this port: the h2
	// connections go to the native grpc.Server.
	cfg.NextProtos = []string{alpnHTTP1, alpnH2}
	cfg.MinVersion = max(cfg.MinVersion, tls.VersionTLS12)
	if !s.cfg.TLSAllowPlaintext {
		r := newALPNRouter(ln, cfg, s.cfg.HeaderTimeout, s)
		return r, r.grpc, r.http
	}
	var tlsL net.Listener
	m, grpcL, httpL := s.newCmux(ln, &tlsL)
	r := newALPNRouter(tlsL, cfg, s.cfg.HeaderTimeout, s)
	r.feed(grpcL, r.grpc)
	r.feed(httpL, r.http)
	return both{m, r}, r.grpc, r.http
}

// both serves cmux and the ALPN router behind it as one muxer.
type both struct {
	m cmux.CMux
	r *alpnRouter
}

func (b both) Serve() error {
	errc := make(chan error, 1)
	go func() { errc <- b.m.Serve() }()
	rerr := b.r.Serve()
	b.m.Close() // the router stops only when cmux's TLS listener is closed
	return errors.Join(<-errc, rerr)
}

func (b both) Close() { b.m.Close(); b.r.Close() }

// alpnRouter terminates TLS on the connections of root and hands each, by
// its negotiated ALPN protocol, to the native gRPC server (h2) or to
// net/http (http/1.1 or none). The handshake runs on its own goroutine per
// connection, bounded by the header timeout, so a silent client pins
// nothing; a plaintext HTTP request gets a 400 and a close, any other
// plaintext (an h2 preface) a close.
type alpnRouter struct {
	root    net.Listener
	cfg     *tls.Config
	timeout time.Duration
	s       *Server

	grpc, http *connListener

	ctx    context.Context // cancelled by Close: handshakes in flight end
	cancel context.CancelFunc
	wg     sync.WaitGroup // handshakes and feeds in flight
}

func newALPNRouter(root net.Listener, cfg *tls.Config, timeout time.Duration, s *Server) *alpnRouter {
	r := &alpnRouter{root: root, cfg: cfg, timeout: timeout, s: s}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.grpc = newConnListener(root.Addr())
	r.http = newConnListener(root.Addr())
	return r
}

// feed hands every connection accepted on l to dst as is (plaintext
// connections cmux already identified), until l is closed.
func (r *alpnRouter) feed(l net.Listener, dst *connListener) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return // cmux closed: shutting down
			}
			dst.deliver(c)
		}
	}()
}

// Serve accepts until root is closed, then waits for the handshakes in
// flight (Close cancels them) and returns nil if root was closed on purpose.
func (r *alpnRouter) Serve() error {
	defer r.wg.Wait()
	for {
		c, err := r.root.Accept()
		if err != nil {
			var ne interface{ Temporary() bool }
			if errors.As(err, &ne) && ne.Temporary() && r.ctx.Err() == nil {
				r.s.log.Debug("accept failed; retrying", "err", err)
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if r.ctx.Err() != nil || cleanStop(err) {
				return nil
			}
			return err
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.handshake(c)
		}()
	}
}

// handshake terminates TLS on c and routes it.
func (r *alpnRouter) handshake(c net.Conn) {
	tc := tls.Server(c, r.cfg)
	_ = c.SetDeadline(time.Now().Add(r.timeout))
	if err := tc.HandshakeContext(r.ctx); err != nil {
		var rh tls.RecordHeaderError
		if errors.As(err, &rh) && rh.Conn != nil && looksLikeHTTP(rh.RecordHeader) {
			// As net/http's own TLS server answers: a clear status
			// rather than a reset the client cannot explain.
			_, _ = rh.Conn.Write([]byte("HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nClient sent a plaintext request to a TLS port: use https.\n"))
		}
		r.s.log.Debug("TLS handshake failed", "remote", c.RemoteAddr(), "err", err)
		_ = c.Close()
		return
	}
	// The servers set their own deadlines from here (grpc-go's
	// ConnectionTimeout, net/http's header and read timeouts).
	_ = c.SetDeadline(time.Time{})
	if tc.ConnectionState().NegotiatedProtocol == alpnH2 {
		r.grpc.deliver(tc)
	} else {
		r.http.deliver(tc)
	}
}

// looksLikeHTTP reports whether a TLS record header is the start of a
// plaintext HTTP/1.x request (as net/http checks it).
func looksLikeHTTP(hdr [5]byte) bool {
	return slices.ContainsFunc([]string{"GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "PATCH", "DELET"},
		func(m string) bool { return bytes.Equal(hdr[:], []byte(m)) })
}

// Close stops accepting, ends the handshakes in flight and closes both
// child listeners: connections arriving later are closed.
func (r *alpnRouter) Close() {
	r.cancel()
	_ = r.root.Close()
	r.grpc.Close()
	r.http.Close()
}

// connListener is a net.Listener fed with connections by the router.
type connListener struct {
	addr      net.Addr
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

func newConnListener(addr net.Addr) *connListener {
	return &connListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

// deliver hands c to Accept, or closes it once the listener is closed.
func (l *connListener) deliver(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		_ = c.Close()
	}
}

// Accept implements net.Listener.
func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener; only this listener closes.
func (l *connListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

// Addr implements net.Listener.
func (l *connListener) Addr() net.Addr { return l.addr }

// validateTLS checks the TLS fields of a Config.
func (c Config) validateTLS() error {
	switch {
	case c.TLS == nil && c.TLSAllowPlaintext:
		return errors.New("server: TLSAllowPlaintext without TLS")
	case c.TLS != nil && len(c.TLS.Certificates) == 0 && c.TLS.GetCertificate == nil && c.TLS.GetConfigForClient == nil:
		return errors.New("server: TLS config has no certificate")
	}
	return nil
}
