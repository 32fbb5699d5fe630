package main

import (
	"github.com/spf13/pflag"

	"github.com/meteorbench/meteorbench/internal/server"
)

// registerTLSFlags defines serve's TLS flags on f.
func registerTLSFlags(f *pflag.FlagSet, t *server.TLSFlags) {
	f.StringVar(&t.Cert, "tls-cert", "", "serve TLS with this PEM certificate `file` (chain included; with --tls-key)")
	f.StringVar(&t.Key, "tls-key", "", "the PEM private key `file` of --tls-cert")
	f.BoolVar(&t.SelfSigned, "tls-self-signed", false, "serve TLS with an ephemeral self-signed ECDSA certificate for localhost, 127.0.0.1, ::1, the listen host and --tls-host; its SHA-256 fingerprint is printed at start")
	f.StringVar(&t.CertOut, "tls-cert-out", "", "with --tls-self-signed: write the certificate's PEM to this `file`, for clients to trust (curl --cacert, run --tls-ca)")
	f.StringSliceVar(&t.Hosts, "tls-host", nil, "with --tls-self-signed: more host names or IP addresses for the certificate (e.g. the server's public address)")
	f.BoolVar(&t.AllowPlaintext, "tls-allow-plaintext", false, "with TLS: also serve plaintext clients on the same port (for run --tls both); not for an exposed server")
}
