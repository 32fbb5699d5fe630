package main

import (
	"github.com/spf13/pflag"

	"github.com/meteorbench/meteorbench/internal/job"
	"github.com/meteorbench/meteorbench/internal/loadgen"
)

// runTLSFlags are run's TLS flags (checked and applied by job.ClientTLS).
type runTLSFlags struct{ job.ClientTLS }

func (t *runTLSFlags) register(fl *pflag.FlagSet) {
	t.Mode = "off"
	fl.Var(&t.Mode, "tls", "TLS: off, on (every cell over TLS; --tls alone), or both (every cell plaintext, then over TLS: the target must serve both, as the own server then does)")
	fl.Lookup("tls").NoOptDefVal = "on"
	fl.StringVar(&t.CA, "tls-ca", "", "with --tls and --target: trust the PEM certificate(s) in this `file` (e.g. serve --tls-cert-out); default: the system's roots")
	fl.BoolVar(&t.Insecure, "tls-insecure", false, "with --tls and --target: do not verify the server's certificate (its traffic is still encrypted)")
}

// takeModeArg takes "both" of "--tls both" (flagvalue.TLSMode.TakeArg).
func (t *runTLSFlags) takeModeArg(fl *pflag.FlagSet, args []string) []string {
	return t.Mode.TakeArg(fl, args)
}

func (t *runTLSFlags) apply(cfg *loadgen.Config, target string) error { return t.Apply(cfg, target) }
