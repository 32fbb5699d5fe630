package main

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/meteorbench/meteorbench/internal/loadgen"
	"github.com/meteorbench/meteorbench/internal/tlsutil"
)

// TLS modes of run --tls.
var tlsModes = map[string][]bool{"off": nil, "on": {true}, "both": {false, true}}

// runTLSFlags are run's TLS flags.
type runTLSFlags struct {
	mode     tlsModeFlag
	ca       string
	insecure bool
}

// tlsModeFlag is --tls off|on|both; --tls alone is on.
type tlsModeFlag string

func (m *tlsModeFlag) String() string { return string(*m) }
func (m *tlsModeFlag) Set(s string) error {
	if _, ok := tlsModes[s]; !ok {
		return fmt.Errorf("%q: want off, on or both", s)
	}
	*m = tlsModeFlag(s)
	return nil
}
func (*tlsModeFlag) Type() string { return "mode" }

func (t *runTLSFlags) register(fl *pflag.FlagSet) {
	t.mode = "off"
	fl.Var(&t.mode, "tls", "TLS: off, on (every cell over TLS; --tls alone), or both (every cell plaintext, then over TLS: the target must serve both, as the own server then does)")
	fl.Lookup("tls").NoOptDefVal = "on"
	fl.StringVar(&t.ca, "tls-ca", "", "with --tls and --target: trust the PEM certificate(s) in this `file` (e.g. serve --tls-cert-out); default: the system's roots")
	fl.BoolVar(&t.insecure, "tls-insecure", false, "with --tls and --target: do not verify the server's certificate (its traffic is still encrypted)")
}

// takeModeArg lets "--tls both" work as "--tls=both": with NoOptDefVal,
// pflag reads the word after --tls as a positional argument, and run takes
// none, so a lone mode word after --tls can only be its value.
func (t *runTLSFlags) takeModeArg(fl *pflag.FlagSet, args []string) []string {
	if len(args) == 1 && fl.Changed("tls") && t.mode == "on" {
		if _, ok := tlsModes[args[0]]; ok {
			t.mode = tlsModeFlag(args[0])
			return nil
		}
	}
	return args
}

// apply checks the TLS flags and sets the load generator's TLS sweep and
// client configuration (for --target; the own server's is set by
// ownServer).
func (t *runTLSFlags) apply(cfg *loadgen.Config, target string) error {
	cfg.TLS = tlsModes[string(t.mode)]
	switch {
	case cfg.TLS == nil && (t.ca != "" || t.insecure):
		return errors.New("--tls-ca and --tls-insecure need --tls")
	case t.ca != "" && t.insecure:
		return errors.New("--tls-ca and --tls-insecure are exclusive: give one")
	case target == "" && (t.ca != "" || t.insecure):
		return errors.New("--tls-ca and --tls-insecure are for --target: the own server's certificate is trusted automatically")
	case cfg.TLS == nil:
		return nil
	}
	tc := &tls.Config{InsecureSkipVerify: t.insecure}
	if t.ca != "" {
		pool, err := tlsutil.CertPool(t.ca)
		if err != nil {
			return fmt.Errorf("--tls-ca: %w", err)
		}
		tc.RootCAs = pool
	}
	cfg.TLSConfig = tc
	return nil
}
