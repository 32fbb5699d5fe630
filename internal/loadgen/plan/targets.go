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
// form, but gRPC-Web and Connect, which the per-protocol form never
// gives one (they follow the one-port form only): those are not served
// (BrowserProtocol).
func (c Config) validateTarget() error {
	if c.Endpoints != nil || !c.Target.Split() {
		return nil
	}
	for _, p := range c.Protocols {
		if c.Target.For(p) == "" && !BrowserProtocol(p) {
			return fmt.Errorf("proto %s: --target %s gives it no address (add %s=HOST:PORT, or leave it out of --proto)", p, c.Target, p)
		}
	}
	return nil
}

// BrowserProtocol reports whether p is a browser's gRPC: gRPC-Web or
// Connect. They carry the meteorites only (no --payload), and have no
// address in the per-protocol form of --target (rest=…,grpc=…): served
// on the one port of `meteorbench serve`, a run against the other form
// lists them as not served.
func BrowserProtocol(p api.Protocol) bool { return p == api.GRPCWeb || p == api.Connect }
