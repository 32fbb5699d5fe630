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
// form, but gRPC-Web and Connect, which most such forms leave out: those
// are listed as not served, with the key to add (BrowserProtocol).
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
// Connect. They carry the meteorites only (no --payload). `meteorbench
// serve` serves them on its one port; against the per-protocol form of
// --target they are measured where it gives them an address (grpc-web=,
// connect=: a proxy, a server of their own), and listed as not served
// where it gives none (rest=…,grpc=… with --proto all).
func BrowserProtocol(p api.Protocol) bool { return p == api.GRPCWeb || p == api.Connect }
