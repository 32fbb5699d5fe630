package job

import (
	"errors"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/flagvalue"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
)

// ProtocolFlags are --proto and --http-version as given: run, capacity
// and fit (RunFlags) and check read them alike, and plan.Config.Validate
// checks the values.
type ProtocolFlags struct {
	Protocols    []string // --proto: names, or all
	HTTPVersions []string // --http-version: 1.1, 2 (results.Dimensions' http entry)
}

// check refuses a --proto with no value: the config reads an empty list
// as the default.
func (p ProtocolFlags) check() error {
	if len(p.Protocols) == 0 {
		return errors.New("--proto: no value")
	}
	return nil
}

// Apply sets cfg's protocols and HTTP versions from the flags; changed
// reports whether the flag of that name was given. cfg.Target must be
// set: against the per-protocol form of --target, the default protocols
// (no --proto) are those it gives an address.
func (p ProtocolFlags) Apply(cfg *plan.Config, changed func(name string) bool) error {
	if err := p.check(); err != nil {
		return err
	}
	cfg.Protocols = flagvalue.ExpandAll(p.Protocols, api.Protocols())
	if changed("http-version") {
		cfg.Sweeps = map[string][]string{"http_version": p.HTTPVersions}
	}
	if cfg.Target.Split() && !changed("proto") && cfg.Endpoints == nil {
		cfg.Protocols = cfg.Target.Protocols()
	}
	return nil
}
