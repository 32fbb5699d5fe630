package main

import (
	"github.com/spf13/pflag"

	"github.com/meteorbench/meteorbench/internal/job"
)

// registerClientTLS defines the load generator's TLS flags (run, capacity,
// fit, check; checked and applied by job.ClientTLS).
func registerClientTLS(fl *pflag.FlagSet, t *job.ClientTLS) {
	t.Mode = "off"
	fl.Var(&t.Mode, "tls", "TLS: off, on (every cell over TLS; --tls alone), or both (every cell plaintext, then over TLS: the target must serve both, as the own server then does)")
	fl.Lookup("tls").NoOptDefVal = "on"
	fl.StringVar(&t.CA, "tls-ca", "", "with --tls and --target: trust the PEM certificate(s) in this `file` (e.g. serve --tls-cert-out); default: the system's roots")
	fl.BoolVar(&t.Insecure, "tls-insecure", false, "with --tls and --target: do not verify the server's certificate (its traffic is still encrypted)")
}
