// Package server is meteorbench's system under test: one listener, one port,
// split with cmux (and, with TLS, by ALPN: tls.go) into HTTP/1.1, served by
// an http.Server, and HTTP/2, whose connections the HTTP/2 router
// (h2route.go) gives to the native grpc.Server when they open with a gRPC
// call and to the http.Server (h2c) otherwise. The http.Server serves REST
// (JSON or protobuf bodies), gRPC-Web and Connect (connect.go), and gRPC
// calls on its HTTP/2 connections through the grpc.Server; all of them
// serve the same 1000 meteorite landings, or, when a client asks for a
// payload size, N records generated from them (records.go).
//
// The data are held in memory as typed values ([]data.Landing for JSON, the
// contract's messages for protobuf); every response is serialised afresh for
// each request, so the server spends the CPU a real service would. Nothing is
// logged on the request path.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/soheilhy/cmux"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
)

// Server serves the REST and gRPC APIs on one listener. Create it with New;
// Serve it once.
type Server struct {
	cfg     Config
	log     *slog.Logger
	token   []byte // the token itself, nil when auth is off
	metrics *metrics

	// The data, typed, shared read-only by every request.
	landings []data.Landing           // REST JSON
	list     *pb.MeteoriteLandingList // protobuf: REST and gRPC
	version  *pb.Version
	payload  *payload.Payload // Config.Payload
	// payloadHdr is the payload's api.HeaderPayload value.
	payloadHdr []string
	success    *pb.StatusResponse
	// generated builds, on the first request for more than data.Count
	// records, the sequence longer answers are cut from (records.go).
	generated func() (*generated, error)

	rest    *restHandler
	grpc    *grpc.Server    // set by Serve: gRPC calls net/http receives go to it (h2route.go)
	connect *connectHandler // nil with a payload
	health  *health.Server
	mem     *memBudget               // the server-wide budget (membudget.go)
	conns   atomic.Pointer[connGate] // set by Serve (conngate.go)
	codec   *checkedCodec
	pprof   *pprofHandler // nil unless Config.Pprof (pprof.go)
	// encoders bounds the large answers being encoded at once, REST and
	// gRPC (restanswer.go).
	encoders encodeSlots

	// drainCtx is cancelled (by startDrain) when shutdown starts: /healthz
	// turns 503, and long-lived auxiliary gRPC streams (health Watch,
	// reflection) end, so they cannot hold the drain open.
	drainCtx   context.Context
	startDrain context.CancelFunc
	served     atomic.Bool

	// panicHook, when set (by tests only), is called at the start of every
	// data call on both protocols, to exercise panic recovery.
	panicHook func()
}

// New builds a Server from cfg, which must be valid.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	cfg = cfg.withDefaults()
	ls, err := data.Landings()
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger,
		metrics:  newMetrics(),
		landings: ls,
		list:     data.ProtoList(ls),
		version:  &pb.Version{ApiVersion: data.Version},
		success:  &pb.StatusResponse{Status: data.Success},
		health:   health.NewServer(),
		mem:      newMemBudget(cfg.MemoryLimit / budgetShare),
		encoders: newEncodeSlots(),
	}
	s.codec = newCheckedCodec(s.encoders)
	if cfg.Payload != nil {
		s.payload, s.payloadHdr = cfg.Payload, []string{cfg.Payload.ID()}
	}
	s.metrics.registerBudget(s.mem)
	s.metrics.registerConns(s)
	s.drainCtx, s.startDrain = context.WithCancel(context.Background())
	if cfg.Token != "" {
		s.token = []byte(cfg.Token)
	}
	s.generated = newGeneratedOnce(s)
	if cfg.Pprof {
		s.pprof = newPprofHandler(s.token, s.drainCtx.Done())
	}
	s.rest = newRESTHandler(s)
	s.connect = newConnectHandler(s) // connect.go
	return s, nil
}

// Serve serves ln until ctx is done, then drains: it stops accepting (new
// connections are refused), lets in-flight calls of both protocols finish
// within Config.ShutdownTimeout, closes whatever is still open after it, and
// returns. It closes ln. It returns nil after a clean drain, and an error if
// the drain ran out of time or serving failed before ctx was done. Serve may
// be called once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if !s.served.CompareAndSwap(false, true) {
		return errors.New("server: Serve called twice")
	}
	gate := newConnGate(ln, s.cfg.MaxConns, s.mem, s.log) // conngate.go
	s.conns.Store(gate)
	ln = gate
	m, grpcL, httpL := s.listeners(ln) // tls.go

	gs := s.newGRPCServer()
	s.grpc = gs
	hs := s.newHTTPServer()

	type result struct {
		who string
		err error
	}
	done := make(chan result, 3)
	go func() { done <- result{"cmux", m.Serve()} }()
	go func() { done <- result{"grpc", gs.Serve(grpcL)} }()
	go func() { done <- result{"http", hs.Serve(httpL)} }()
	reliefCtx, stopRelief := context.WithCancel(ctx)
	defer stopRelief()
	go s.mem.relieve(reliefCtx) // membudget.go

	var early error // a server that stopped before ctx was done
	pending := 3
	select {
	case <-ctx.Done():
	case r := <-done:
		pending--
		early = fmt.Errorf("server: %s stopped serving: %w", r.who, r.err)
		if r.err == nil {
			early = fmt.Errorf("server: %s stopped serving", r.who)
		}
	}

	start := time.Now()
	s.log.Debug("draining", "timeout", s.cfg.ShutdownTimeout)
	s.startDrain()
	s.health.Shutdown() // NOT_SERVING for anyone watching
	// Refuse new connections first, then release the child listeners'
	// Accepts so both servers' Serve loops can return.
	_ = ln.Close()
	m.Close()

	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	httpDone := make(chan error, 1)
	go func() { httpDone <- hs.Shutdown(sctx) }()
	grpcDone := make(chan struct{})
	go func() { gs.GracefulStop(); close(grpcDone) }()

	forced := false
	select {
	case <-grpcDone:
	case <-sctx.Done():
		forced = true
		gs.Stop() // ends a GracefulStop that is taking too long
		<-grpcDone
	}
	// Shutdown also reports the error of closing its (already closed)
	// listener; only running out of time matters here.
	if err := <-httpDone; err != nil && !cleanStop(err) {
		forced = true
		_ = hs.Close()
	}

	var errs []error
	if early != nil {
		errs = append(errs, early)
	}
	for ; pending > 0; pending-- {
		r := <-done
		if !cleanStop(r.err) {
			errs = append(errs, fmt.Errorf("server: %s: %w", r.who, r.err))
		}
	}
	if forced {
		errs = append(errs, fmt.Errorf("server: drain did not finish within %v; closed busy connections: %w",
			s.cfg.ShutdownTimeout, context.DeadlineExceeded))
	}
	s.log.Debug("stopped", "drain", time.Since(start), "forced", forced)
	return errors.Join(errs...)
}

// newCmux splits a plaintext listener into HTTP/2 and HTTP/1.1. With tlsL,
// TLS ClientHellos go to *tlsL first (TLSAllowPlaintext).
func (s *Server) newCmux(ln net.Listener, tlsL *net.Listener) (cmux.CMux, net.Listener, net.Listener) {
	m := cmux.New(ln)
	// A connection that does not show its protocol in time is closed
	// instead of pinning a goroutine (and m.Serve at shutdown).
	m.SetReadTimeout(s.cfg.HeaderTimeout)
	m.HandleError(s.handleMuxError)
	if tlsL != nil {
		*tlsL = m.Match(cmux.TLS())
	}
	// HTTP2() reads only the 24-byte client preface: the HTTP/2 router
	// (h2route.go) then reads the first request's headers. HTTP1() parses
	// the request line: every method reaches net/http, PATCH included
	// (HTTP1Fast would reset it).
	h2L := m.Match(cmux.HTTP2())
	httpL := m.Match(cmux.HTTP1())
	return m, h2L, httpL
}

// cleanStop reports whether err is what a listener or server returns when it
// is closed on purpose.
func cleanStop(err error) bool {
	return err == nil ||
		errors.Is(err, cmux.ErrServerClosed) ||
		errors.Is(err, cmux.ErrListenerClosed) ||
		errors.Is(err, http.ErrServerClosed) ||
		errors.Is(err, grpc.ErrServerStopped) ||
		errors.Is(err, net.ErrClosed)
}

// handleMuxError decides whether cmux keeps serving after err. A connection
// that matched no protocol (junk, or silence until the read timeout) is
// already closed: keep serving, or one bad client would close the root
// listener for everyone. Temporary accept errors (EMFILE, ECONNABORTED) back
// off briefly and go on; anything else (the listener closed) stops.
func (s *Server) handleMuxError(err error) bool {
	var nm cmux.ErrNotMatched
	if errors.As(err, &nm) {
		return true
	}
	var ne interface{ Temporary() bool }
	if errors.As(err, &ne) && ne.Temporary() {
		s.log.Debug("accept failed; retrying", "err", err)
		time.Sleep(10 * time.Millisecond)
		return true
	}
	return false
}

// newHTTPServer builds the HTTP side (HTTP/1.1, and HTTP/2 as h2c on the
// connections the HTTP/2 router hands it, decrypted ones included),
// hardened for an exposed host with the gRPC side's limits: streams per
// connection, header list, idle reaping, keepalive pings, a write that
// makes no progress.
func (s *Server) newHTTPServer() *http.Server {
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	return &http.Server{
		Handler:     s.rest,
		Protocols:   &protos,
		ConnContext: s.connContext, // h2limits.go
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: int(s.cfg.MaxConcurrentStreams),
			// grpc-go's 16 KiB, not net/http's 1 MiB: a connection keeps
			// a read buffer of the largest frame it was sent, so 100
			// connections that each began a 1 MiB frame held 138 MiB
			// (TestH2CLargeFrames; 22 MiB on gRPC's).
			MaxReadFrameSize: h2InitialMaxFrameSize,
			SendPingTimeout:  keepaliveTime,
			PingTimeout:      keepaliveTimeout,
			WriteByteTimeout: s.cfg.WriteTimeout,
		},
		ReadHeaderTimeout: s.cfg.HeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		// net/http's own complaints (a client that went away, a bad
		// request) are per connection: debug level only.
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
}
