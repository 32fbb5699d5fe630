package plan

import (
	"fmt"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/target"
)

// addresses are the distinct addresses of the run's protocols.
func (c Config) Addresses(protocols []api.Protocol) []target.Address {
	return target.Addresses(c.Target, protocols)
}

// validateTarget refuses a protocol with no address in the per-protocol
// form.
func (c Config) validateTarget() error {
	if c.Endpoints != nil || !c.Target.Split() {
		return nil
	}
	for _, p := range c.Protocols {
		if c.Target.For(p) == "" {
			return fmt.Errorf("proto %s: --target %s gives it no address (add %s=HOST:PORT, or leave it out of --proto)", p, c.Target, p)
		}
	}
	return nil
}
