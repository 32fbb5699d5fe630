package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"

	"github.com/spf13/pflag"

	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/tlsutil"
)

// serveTLSFlags are serve's TLS flags.
type serveTLSFlags struct {
	cert, key      string
	selfSigned     bool
	certOut        string
	hosts          []string
	allowPlaintext bool
}

func (t *serveTLSFlags) register(f *pflag.FlagSet) {
	f.StringVar(&t.cert, "tls-cert", "", "serve TLS with this PEM certificate `file` (chain included; with --tls-key)")
	f.StringVar(&t.key, "tls-key", "", "the PEM private key `file` of --tls-cert")
	f.BoolVar(&t.selfSigned, "tls-self-signed", false, "serve TLS with an ephemeral self-signed ECDSA certificate for localhost, 127.0.0.1, ::1, the listen host and --tls-host; its SHA-256 fingerprint is printed at start")
	f.StringVar(&t.certOut, "tls-cert-out", "", "with --tls-self-signed: write the certificate's PEM to this `file`, for clients to trust (curl --cacert, run --tls-ca)")
	f.StringSliceVar(&t.hosts, "tls-host", nil, "with --tls-self-signed: more host names or IP addresses for the certificate (e.g. the server's public address)")
	f.BoolVar(&t.allowPlaintext, "tls-allow-plaintext", false, "with TLS: also serve plaintext clients on the same port (for run --tls both); not for an exposed server")
}

// check reports contradictory TLS flags, as a usage error.
func (t *serveTLSFlags) check() error {
	switch {
	case (t.cert == "") != (t.key == ""):
		return errors.New("--tls-cert and --tls-key go together")
	case t.cert != "" && t.selfSigned:
		return errors.New("--tls-cert and --tls-self-signed are exclusive: give one")
	case !t.selfSigned && t.certOut != "":
		return errors.New("--tls-cert-out needs --tls-self-signed")
	case !t.selfSigned && len(t.hosts) > 0:
		return errors.New("--tls-host needs --tls-self-signed")
	case t.allowPlaintext && t.cert == "" && !t.selfSigned:
		return errors.New("--tls-allow-plaintext needs --tls-cert or --tls-self-signed")
	}
	return nil
}

// apply loads or makes the certificate into cfg, writes --tls-cert-out and
// prints the self-signed certificate's fingerprint on stderr. listenHost
// goes into a self-signed certificate.
func (t *serveTLSFlags) apply(cfg *server.Config, listenHost string, stderr io.Writer) error {
	var cert tls.Certificate
	switch {
	case t.cert != "":
		c, err := tls.LoadX509KeyPair(t.cert, t.key)
		if err != nil {
			return usageError{fmt.Errorf("--tls-cert/--tls-key: %w", err)}
		}
		cert = c
	case t.selfSigned:
		hosts := append([]string{listenHost}, t.hosts...)
		c, certPEM, err := tlsutil.SelfSigned(hosts...)
		if err != nil {
			return fmt.Errorf("--tls-self-signed: %w", err)
		}
		if t.certOut != "" {
			if err := tlsutil.WritePEM(t.certOut, certPEM); err != nil {
				return fmt.Errorf("--tls-cert-out: %w", err)
			}
		}
		fmt.Fprintf(stderr, "meteorbench serve: TLS self-signed certificate, SHA-256 fingerprint %s\n", tlsutil.Fingerprint(c.Certificate[0]))
		cert = c
	default:
		return nil
	}
	cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	cfg.TLSAllowPlaintext = t.allowPlaintext
	return nil
}

// tokenWarning warns (one line) when a token would cross the network in
// plaintext: set, no TLS, and listening on more than loopback.
func tokenWarning(cfg server.Config, addr net.Addr, log *slog.Logger) {
	if cfg.Token == "" || (cfg.TLS != nil && !cfg.TLSAllowPlaintext) {
		return
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return
	}
	log.Warn("--token without TLS on a non-loopback address: the token crosses the network in plaintext; add --tls-cert/--tls-key or --tls-self-signed")
}

// tlsNote is the start-up line's words about TLS.
func tlsNote(cfg server.Config) string {
	switch {
	case cfg.TLS == nil:
		return ""
	case cfg.TLSAllowPlaintext:
		return ", TLS and plaintext"
	}
	return ", TLS"
}
