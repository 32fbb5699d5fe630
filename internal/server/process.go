package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"

	"github.com/meteorbench/meteorbench/internal/addrfile"
	"github.com/meteorbench/meteorbench/internal/tlsutil"
)

// TokenEnv names the environment variable the commands read a token from
// when no --token is given (safer than the flag, which other users can
// read in the process list); `run` hands its own server the token there.
const TokenEnv = "METEORBENCH_TOKEN"

// Process is what `meteorbench serve` adds to a Config: where to listen,
// where to say so, and where the certificate comes from.
type Process struct {
	// Addr is the host:port to listen on (port 0 picks a free one).
	Addr string
	// AddrFile, when set, receives the bound address (package addrfile)
	// once listening, and is removed at exit.
	AddrFile string
	// Stderr receives the start-up line and the self-signed certificate's
	// fingerprint.
	Stderr io.Writer
	// Pinned is the start-up line's words about CPU pinning ("" for none).
	Pinned string
	// MemoryLimitFrom says where Config.MemoryLimit came from, for the
	// debug log.
	MemoryLimitFrom string
	// NetNS, when set, names a network namespace (run's packet link) the
	// server also listens in, on the same port (netns.go).
	NetNS string
}

// ListenAndServe serves cfg as p says until ctx is cancelled: it listens,
// writes the address file (a failure costs a warning, not the server: a
// read-only file system), prints the one start-up line on p.Stderr, and
// serves.
func ListenAndServe(ctx context.Context, cfg Config, p Process) error {
	srv, err := New(cfg)
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", p.Addr)
	if err != nil {
		return err
	}
	if p.NetNS != "" {
		inNS, err := listenInNetNS(p.NetNS, ln.Addr().(*net.TCPAddr).Port)
		if err != nil {
			ln.Close()
			return err
		}
		ln = joinListeners(ln, inNS)
	}
	// HTTP/3 on the same port number over UDP (http3.go).
	h3, h3err := listenUDP(ln.Addr(), p.NetNS)
	var h3TLS *tls.Config
	if h3err == nil {
		host, _, _ := net.SplitHostPort(p.Addr)
		if h3TLS, h3err = srv.http3TLS(host); h3err != nil {
			for _, pc := range h3 {
				pc.Close()
			}
		}
	}
	h3Note := "; HTTP/3 on UDP too"
	if h3err != nil {
		h3Note = ""
	}
	// Written before the start-up line, so it is there once that line is.
	var fileErr error
	if p.AddrFile != "" {
		if fileErr = addrfile.Write(p.AddrFile, ln.Addr().String(), cfg.TLS != nil); fileErr == nil {
			defer os.Remove(p.AddrFile)
		}
	}
	fmt.Fprintf(p.Stderr, "meteorbench serve: listening on %s (REST over HTTP/1.1 and HTTP/2, gRPC, gRPC-Web and Connect%s%s)%s\n", ln.Addr(), tlsNote(cfg), h3Note, p.Pinned)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if tokenExposed(cfg, ln.Addr()) {
		log.Warn("--token without TLS on a non-loopback address: the token crosses the network in plaintext; add --tls-cert/--tls-key or --tls-self-signed")
	}
	if h3err != nil {
		log.Warn("HTTP/3 not served", "err", h3err)
	}
	if fileErr != nil {
		log.Warn("health --addr-file will not find this server", "err", fmt.Errorf("--addr-file: %w", fileErr))
	}
	log.Debug("configuration", "max_body", cfg.MaxBody, "token", cfg.Token != "",
		"header_timeout", cfg.HeaderTimeout, "read_timeout", cfg.ReadTimeout,
		"write_timeout", cfg.WriteTimeout, "idle_timeout", cfg.IdleTimeout,
		"shutdown_timeout", cfg.ShutdownTimeout, "max_streams", cfg.MaxConcurrentStreams, "max_conns", cmp.Or(cfg.MaxConns, DefaultMaxConns(cfg.MemoryLimit)),
		"memory_limit", cfg.MemoryLimit, "memory_limit_from", p.MemoryLimitFrom)
	if h3err != nil {
		return srv.Serve(ctx, ln)
	}
	h3ctx, stopH3 := context.WithCancel(ctx) // also when Serve fails
	h3done := make(chan error, 1)
	go func() { h3done <- srv.serveHTTP3(h3ctx, h3, h3TLS) }()
	err = srv.Serve(ctx, ln)
	stopH3()
	return errors.Join(err, <-h3done)
}

// TLSFlags are serve's TLS settings: a certificate from files, or an
// ephemeral self-signed one for localhost, the loopback addresses, the
// listen host and Hosts (its PEM written to CertOut when set); plaintext
// clients served alongside when AllowPlaintext.
type TLSFlags struct {
	Cert, Key      string
	SelfSigned     bool
	CertOut        string
	Hosts          []string
	AllowPlaintext bool
}

// Check reports contradictory TLS settings, as one line naming serve's
// flags.
func (t TLSFlags) Check() error {
	switch {
	case (t.Cert == "") != (t.Key == ""):
		return errors.New("--tls-cert and --tls-key go together")
	case t.Cert != "" && t.SelfSigned:
		return errors.New("--tls-cert and --tls-self-signed are exclusive: give one")
	case !t.SelfSigned && t.CertOut != "":
		return errors.New("--tls-cert-out needs --tls-self-signed")
	case !t.SelfSigned && len(t.Hosts) > 0:
		return errors.New("--tls-host needs --tls-self-signed")
	case t.AllowPlaintext && t.Cert == "" && !t.SelfSigned:
		return errors.New("--tls-allow-plaintext needs --tls-cert or --tls-self-signed")
	}
	return nil
}

// ErrCertFiles is wrapped when --tls-cert/--tls-key cannot be loaded: a
// bad argument rather than a failure.
var ErrCertFiles = errors.New("--tls-cert/--tls-key")

// Apply puts the certificate into cfg: loaded from the files, or made
// self-signed (its PEM written to CertOut, its fingerprint printed on
// stderr). listenHost goes into a self-signed certificate.
func (t TLSFlags) Apply(cfg *Config, listenHost string, stderr io.Writer) error {
	var cert tls.Certificate
	switch {
	case t.Cert != "":
		c, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCertFiles, err)
		}
		cert = c
	case t.SelfSigned:
		c, certPEM, err := tlsutil.SelfSigned(append([]string{listenHost}, t.Hosts...)...)
		if err != nil {
			return fmt.Errorf("--tls-self-signed: %w", err)
		}
		if t.CertOut != "" {
			if err := tlsutil.WritePEM(t.CertOut, certPEM); err != nil {
				return fmt.Errorf("--tls-cert-out: %w", err)
			}
		}
		fmt.Fprintf(stderr, "meteorbench serve: TLS self-signed certificate, SHA-256 fingerprint %s\n", tlsutil.Fingerprint(c.Certificate[0]))
		cert = c
	default:
		return nil
	}
	cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	cfg.TLSAllowPlaintext = t.AllowPlaintext
	return nil
}

// tokenExposed reports whether a token would cross the network in
// plaintext: set, no TLS (or plaintext allowed too), and listening on more
// than loopback.
func tokenExposed(cfg Config, addr net.Addr) bool {
	if cfg.Token == "" || (cfg.TLS != nil && !cfg.TLSAllowPlaintext) {
		return false
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err != nil || !ip.IsLoopback()
}

// tlsNote is the start-up line's words about TLS.
func tlsNote(cfg Config) string {
	switch {
	case cfg.TLS == nil:
		return ""
	case cfg.TLSAllowPlaintext:
		return ", TLS and plaintext"
	}
	return ", TLS"
}
