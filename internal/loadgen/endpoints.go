package loadgen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
)

// withEndpoints is the defaults of a run of the user's endpoints: a
// scenario per pair, over the protocols they have.
func (c Config) withEndpoints() Config {
	if len(c.Scenarios) == 0 {
		c.Scenarios = c.Endpoints.Scenarios()
	}
	if len(c.Protocols) == 0 {
		c.Protocols = c.Endpoints.Protocols()
	}
	return c
}

// validateEndpoints refuses what an endpoint run cannot measure: the
// contract's payload sizes and compression, which a user's own endpoint
// knows nothing of.
func (c Config) validateEndpoints() error {
	switch {
	case c.Endpoints == nil:
		return nil
	case len(c.Endpoints.Protocols()) == 0:
		return errors.New("endpoints: neither a REST URL nor a gRPC method")
	case len(c.Records) > 0:
		return errors.New("--records sizes the contract's answers: a run of your own endpoints sends what --rest-body and --grpc-request say")
	}
	for _, z := range c.Compress {
		if z != CompressNone {
			return fmt.Errorf("--compress %s asks the contract's server: not measured on your own endpoints", z)
		}
	}
	names := c.Endpoints.Scenarios()
	for _, part := range c.Mix {
		if !slices.Contains(names, part.Scenario) {
			return fmt.Errorf("mix %s: %s is no pair of the endpoints (they are %s)", c.Mix, part.Scenario, format.Names(names))
		}
	}
	for _, l := range c.Links {
		for _, p := range c.Endpoints.Protocols() {
			if as := c.Endpoints.Addrs(p); !l.None() && len(as) > 1 {
				return fmt.Errorf("link %s: relays to one address, and the %s endpoints are at %d (%s)", l, p, len(as), strings.Join(as, ", "))
			}
		}
	}
	return nil
}

// addrOf is the address spec's calls go to: the target's, or for an
// endpoint cell its endpoint's (an emulated link relays there).
func (r *runner) addrOf(spec cellSpec) string {
	if r.cfg.Endpoints != nil {
		return r.cfg.Endpoints.Addr(spec.Protocol, spec.Scenario)
	}
	return r.cfg.Target.For(spec.Protocol)
}

// scraperOf is the scraper of the server that answers spec's calls: the
// target's, or for an endpoint cell its endpoint's; nil when that server's
// metrics are not read (then its CPU per call is absent, never 0).
func (r *runner) scraperOf(spec cellSpec) cpuSampler {
	return r.sides[spec.Protocol]
}

// openSides finds which of the endpoints' servers serve meteorbench's
// metrics, and warns of the others, and says how answers that are not
// decoded into typed values are (the probe calls settled it).
func (r *runner) openSides(ctx context.Context, warn func(string)) {
	for _, n := range r.cfg.Endpoints.Notes() {
		warn(n)
	}
	r.sides = map[api.Protocol]cpuSampler{}
	for _, p := range r.cfg.Endpoints.Protocols() {
		addrs := r.cfg.Endpoints.Addrs(p)
		if pid := r.cfg.ServerPID.For(p); pid != 0 { // --server-pid: that process, whatever its addresses
			r.sides[p] = &procSampler{pid: pid}
			continue
		}
		if len(addrs) != 1 {
			warn(fmt.Sprintf("server CPU per call not reported for the %s endpoints: they are at %d addresses (%s), and a cell's server CPU is read from one", p.Title(), len(addrs), strings.Join(addrs, ", ")))
			continue
		}
		addr := addrs[0]
		s, err := r.openScraper(ctx, addr) // scrape.go
		if err != nil {
			warn(fmt.Sprintf("server CPU per call not reported for the %s endpoint: %s has no usable /metrics (%v)", p.Title(), addr, err))
			continue
		}
		r.sides[p] = s
	}
}
