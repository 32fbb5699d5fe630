package server

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/meteorbench/meteorbench/internal/payload"
)

// Defaults applied to the zero values of Config.
const (
	DefaultMaxBody              = 8 << 20 // 8 MiB
	DefaultMaxHeaderBytes       = 64 << 10
	DefaultMaxConcurrentStreams = 1000
	DefaultHeaderTimeout        = 5 * time.Second
	DefaultReadTimeout          = 30 * time.Second
	DefaultWriteTimeout         = 60 * time.Second
	DefaultIdleTimeout          = 2 * time.Minute
	DefaultShutdownTimeout      = 8 * time.Second // under Docker's 10 s stop grace period
)

// minMemoryLimit is the least MemoryLimit: the server's own data take
// about 30 MB, 60 MB once a client has asked for more than 1000 records.
const minMemoryLimit = 64 << 20

// fallbackMemoryLimit is MemoryLimit when DefaultMemoryLimit finds nothing.
const fallbackMemoryLimit = 1 << 30

// maxMaxBody bounds MaxBody: grpc-go takes the limit as an int, and nothing in
// this benchmark comes close.
const maxMaxBody = 1 << 30

// Config configures a Server. The zero value is valid: every zero field takes
// the default named in its comment.
type Config struct {
	// Token, when not empty, is required on the four data routes and RPCs:
	// REST as "Authorization: Bearer <Token>", gRPC as metadata
	// "authorization: Bearer <Token>". /healthz, /metrics, grpc.health.v1 and
	// server reflection stay open. It must be printable ASCII without spaces.
	Token string

	// MaxBody is the largest request body (REST, 413 beyond it) and the
	// largest received gRPC message (RESOURCE_EXHAUSTED beyond it), in bytes.
	// Zero means DefaultMaxBody (8 MiB); at most 1 GiB.
	MaxBody int64

	// MaxHeaderBytes bounds HTTP/1.1 request headers and the gRPC header
	// list. Zero means DefaultMaxHeaderBytes (64 KiB).
	MaxHeaderBytes int

	// MaxConcurrentStreams bounds the concurrent gRPC calls on one
	// connection; calls beyond it wait on the client. Zero means
	// DefaultMaxConcurrentStreams (1000).
	MaxConcurrentStreams uint32

	// HeaderTimeout bounds how long a new connection may take to show which
	// protocol it speaks (cmux), an HTTP/1.1 client to send its request
	// headers, and a gRPC client to finish the HTTP/2 handshake. Connections
	// that take longer are closed. A drain also waits (at most this long) for
	// connections still being identified. Zero means DefaultHeaderTimeout (5 s).
	HeaderTimeout time.Duration

	// ReadTimeout bounds reading one whole HTTP/1.1 request, body included.
	// Zero means DefaultReadTimeout (30 s).
	ReadTimeout time.Duration

	// WriteTimeout bounds writing one HTTP/1.1 response, from the end of the
	// request headers. Zero means DefaultWriteTimeout (60 s): room for a slow
	// client to read the 1000 records.
	WriteTimeout time.Duration

	// IdleTimeout closes connections of either protocol that have carried no
	// call for this long. Zero means DefaultIdleTimeout (2 min).
	IdleTimeout time.Duration

	// ShutdownTimeout bounds the graceful drain once the context given to
	// Serve is done; connections still busy then are closed. Zero means
	// DefaultShutdownTimeout (8 s, under Docker's 10 s stop grace period).
	ShutdownTimeout time.Duration

	// TLS, when set, makes the port TLS only: the server terminates TLS
	// and routes each connection by its ALPN protocol, h2 to gRPC and
	// http/1.1 (or none) to REST (tls.go). Its certificates are used as
	// given; NextProtos is set by the server. Plaintext clients fail at
	// once. Nil: plaintext.
	TLS *tls.Config
	// TLSAllowPlaintext, with TLS, also serves plaintext clients on the
	// same port (for run --tls both). Off for an exposed server.
	TLSAllowPlaintext bool

	// MemoryLimit is the memory the server may use, in bytes. A quarter of
	// it is the budget, shared by every connection of both protocols, for
	// the answers the large calls queue or write and the request bodies
	// being read (membudget.go): when it is spent, new large calls wait up
	// to a second, then get 503 / RESOURCE_EXHAUSTED. The rest is the
	// server's data and the garbage collector's headroom. The server does
	// not set Go's soft memory limit (debug.SetMemoryLimit): that is the
	// program's call (serve does). Zero means DefaultMemoryLimit().
	MemoryLimit int64

	// MaxConns bounds the connections open at once, both protocols
	// together (conngate.go): past it a new connection is closed at once.
	// Each open connection holds 64 KiB of the memory budget. Zero means
	// DefaultMaxConns(MemoryLimit): half the budget's worth, 1536 for a
	// 768 MiB limit.
	MaxConns int

	// ProxiedGRPCNative keeps a connection whose first request is gRPC
	// on grpc-go's native transport even when that request bears a
	// reverse proxy's headers (Forwarded, Via, X-Forwarded-*). Off (the
	// default), such a connection goes to net/http (h2route.go), so that a
	// proxy pooling every client's requests over it may send REST on it
	// too, at connect's cost per gRPC call (2.8x the native transport's
	// server CPU per small call, 1.8x per 1000 records, measured). On, a
	// proxy must keep gRPC on connections of its own (meteorbench's
	// deploy/proxy configs do), and gRPC behind it costs what it costs
	// direct: run --proxy sets it for its own server.
	ProxiedGRPCNative bool

	// Payload, when set, is served instead of the meteorites (payload.go):
	// the REST routes answer its items, and the gRPC service is
	// meteorbench.payload.Payload instead of MeteoriteLandingsService.
	Payload *payload.Payload

	// Pprof serves the profiling endpoint (pprof.go) at /debug/pprof/,
	// behind Token when one is set. Off: no profiling endpoint.
	Pprof bool

	// Logger receives start-up, shutdown and connection-level debug
	// messages, never one per request. Nil discards them.
	Logger *slog.Logger
}

// Validate reports the first invalid field, if any, in one line that
// starts with the setting's name as serve's flag has it ("max-conns -1:
// must not be negative"), so serve prefixes "--" and says no more (as
// plan.Config.Validate does for run); New prefixes "server: ".
func (c Config) Validate() error {
	if err := c.validateTLS(); err != nil { // tls.go
		return err
	}
	if err := CheckToken(c.Token); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	switch {
	case c.MaxBody < 0:
		return fmt.Errorf("max-body %d: must not be negative", c.MaxBody)
	case c.MaxBody > maxMaxBody:
		return fmt.Errorf("max-body %d: over the 1 GiB limit", c.MaxBody)
	case c.MaxHeaderBytes < 0:
		return fmt.Errorf("max-header-bytes %d: must not be negative", c.MaxHeaderBytes)
	case c.MaxConns < 0:
		return fmt.Errorf("max-conns %d: must not be negative", c.MaxConns)
	case c.MemoryLimit < 0:
		return fmt.Errorf("memory-limit %d: must not be negative", c.MemoryLimit)
	case c.MemoryLimit > 0 && c.MemoryLimit < minMemoryLimit:
		return fmt.Errorf("memory-limit %d: under the %d MiB minimum", c.MemoryLimit, minMemoryLimit>>20)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"header-timeout", c.HeaderTimeout},
		{"read-timeout", c.ReadTimeout},
		{"write-timeout", c.WriteTimeout},
		{"idle-timeout", c.IdleTimeout},
		{"shutdown-timeout", c.ShutdownTimeout},
	} {
		if d.v < 0 {
			return fmt.Errorf("%s %v: must not be negative", d.name, d.v)
		}
	}
	return nil
}

// CheckToken refuses a bearer token a client could not send as given:
// only printable ASCII without spaces.
func CheckToken(token string) error {
	for i := 0; i < len(token); i++ {
		if b := token[i]; b <= ' ' || b > '~' {
			return fmt.Errorf("must be printable ASCII without spaces (byte %d is %#x)", i, b)
		}
	}
	return nil
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
	c.MaxBody = cmp.Or(c.MaxBody, DefaultMaxBody)
	c.MaxHeaderBytes = cmp.Or(c.MaxHeaderBytes, DefaultMaxHeaderBytes)
	c.MaxConcurrentStreams = cmp.Or(c.MaxConcurrentStreams, DefaultMaxConcurrentStreams)
	c.HeaderTimeout = cmp.Or(c.HeaderTimeout, DefaultHeaderTimeout)
	c.ReadTimeout = cmp.Or(c.ReadTimeout, DefaultReadTimeout)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, DefaultWriteTimeout)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, DefaultIdleTimeout)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, DefaultShutdownTimeout)
	if c.MemoryLimit == 0 {
		c.MemoryLimit, _ = DefaultMemoryLimit()
		c.MemoryLimit = max(cmp.Or(c.MemoryLimit, fallbackMemoryLimit), minMemoryLimit)
	}
	c.MaxConns = cmp.Or(c.MaxConns, DefaultMaxConns(c.MemoryLimit))
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
