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
// h2 (every gRPC client, curl --http2, browsers, net/http with HTTP/2 on)
// gets HTTP/2, routed by its first request's content-type (h2route.go);
// one that offers only http/1.1, or no ALPN, gets HTTP/1.1 and REST.
const (
	alpnH2    = "h2"
	alpnHTTP1 = "http/1.1"
)

// muxer splits one listener into the gRPC and the HTTP listeners: cmux in
// plaintext, the ALPN router with TLS, each followed by the HTTP/2 router.
type muxer interface {
	Serve() error
	Close()
}

// listeners splits ln by protocol: cmux on plaintext (newCmux), the ALPN
// router with TLS, or both on one port with TLSAllowPlaintext (cmux first
// tells a TLS ClientHello from a plaintext preface). HTTP/2 connections,
// plaintext or decrypted, go through sniffH2 to either listener.
func (s *Server) listeners(ln net.Listener) (muxer, net.Listener, net.Listener) {
	if s.cfg.TLS == nil {
		r := newRouter(s, ln.Addr())
		m, h2L, httpL := s.newCmux(ln, nil)
		r.feedH2(h2L)
		r.feed(httpL, r.http)
		return plainMux{m, r}, r.grpc, r.http
	}
	cfg := s.cfg.TLS.Clone()
	cfg.NextProtos = []string{alpnH2, alpnHTTP1}
	cfg.MinVersion = max(cfg.MinVersion, tls.VersionTLS12)
	if !s.cfg.TLSAllowPlaintext {
		r := newALPNRouter(ln, cfg, s.cfg.HeaderTimeout, s)
		return r, r.grpc, r.http
	}
	var tlsL net.Listener
	m, h2L, httpL := s.newCmux(ln, &tlsL)
	r := newALPNRouter(tlsL, cfg, s.cfg.HeaderTimeout, s)
	r.feedH2(h2L)
	r.feed(httpL, r.http)
	return both{m, r}, r.grpc, r.http
}

// plainMux serves cmux and the HTTP/2 router behind it as one muxer.
type plainMux struct {
	m cmux.CMux
	r *router
}

func (p plainMux) Serve() error {
	err := p.m.Serve()
	p.r.Close()
	p.r.wg.Wait()
	return err
}

func (p plainMux) Close() { p.m.Close(); p.r.Close() }

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

// router hands connections to the gRPC and HTTP listeners: as they are
// (HTTP/1.1 ones cmux identified), or, for HTTP/2, where sniffH2 says.
type router struct {
	s          *Server
	grpc, http *connListener

	ctx    context.Context // cancelled by Close: sniffs in flight end
	cancel context.CancelFunc
	wg     sync.WaitGroup // sniffs and feeds in flight
}

func newRouter(s *Server, addr net.Addr) *router {
	r := &router{s: s, grpc: newConnListener(addr), http: newConnListener(addr)}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

// feed hands every connection accepted on l to dst as is (plaintext
// connections cmux already identified), until l is closed.
func (r *router) feed(l net.Listener, dst *connListener) { r.each(l, dst.deliver) }

// feedH2 routes every connection accepted on l (HTTP/2 ones) by its first
// request, each on its own goroutine, until l is closed.
func (r *router) feedH2(l net.Listener) {
	r.each(l, func(c net.Conn) {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.routeH2(c, time.Now().Add(r.s.cfg.HeaderTimeout))
		}()
	})
}

// each calls f with every connection accepted on l until l is closed
// (cmux closed: shutting down).
func (r *router) each(l net.Listener, f func(net.Conn)) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			f(c)
		}
	}()
}

// routeH2 hands the HTTP/2 connection c to the server its first request is
// for (h2route.go), or closes it.
func (r *router) routeH2(c net.Conn, deadline time.Time) {
	stop := context.AfterFunc(r.ctx, func() { _ = c.SetDeadline(time.Now()) })
	hc, route, err := r.s.sniffH2(c, deadline)
	if !stop() || err != nil {
		r.s.log.Debug("HTTP/2 connection closed before its first request", "remote", c.RemoteAddr(), "err", err)
		_ = c.Close()
		return
	}
	if route == routeGRPC {
		r.grpc.deliver(hc)
	} else {
		r.http.deliver(hc)
	}
}

// Close ends the sniffs in flight and closes both child listeners:
// connections delivered later are closed.
func (r *router) Close() {
	r.cancel()
	r.grpc.Close()
	r.http.Close()
}

// alpnRouter terminates TLS on the connections of root and hands each, by
// its negotiated ALPN protocol, to the HTTP/2 router (h2) or to net/http
// (http/1.1 or none). The handshake runs on its own goroutine per
// connection, bounded by the header timeout, so a silent client pins
// nothing; a plaintext HTTP request gets a 400 and a close, any other
// plaintext (an h2 preface) a close.
type alpnRouter struct {
	*router
	root    net.Listener
	cfg     *tls.Config
	timeout time.Duration
}

func newALPNRouter(root net.Listener, cfg *tls.Config, timeout time.Duration, s *Server) *alpnRouter {
	return &alpnRouter{router: newRouter(s, root.Addr()), root: root, cfg: cfg, timeout: timeout}
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
	if tc.ConnectionState().NegotiatedProtocol == alpnH2 {
		// net/http serves HTTP/2 only on a *tls.Conn it terminated
		// itself (golang/go#55076): the REST side gets the decrypted
		// connection as h2c.
		r.routeH2(tc, time.Now().Add(r.timeout))
		return
	}
	// The servers set their own deadlines from here (net/http's header
	// and read timeouts).
	_ = c.SetDeadline(time.Time{})
	r.http.deliver(tc)
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
	r.router.Close()
	_ = r.root.Close()
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
		return errors.New("tls: TLSAllowPlaintext without a TLS config")
	case c.TLS != nil && len(c.TLS.Certificates) == 0 && c.TLS.GetCertificate == nil && c.TLS.GetConfigForClient == nil:
		return errors.New("tls: the TLS config has no certificate")
	}
	return nil
}
