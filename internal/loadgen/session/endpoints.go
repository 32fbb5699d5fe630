package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
)

// addrOf is the address spec's calls go to: the target's, the proxy's in
// front of it (run --proxy), or for an endpoint cell its endpoint's (an
// emulated link relays there).
func (r *Session) addrOf(spec plan.Spec) string {
	if spec.Proxy != "" {
		return r.cfg.Behind[spec.Proxy].Addr
	}
	if r.cfg.Endpoints != nil {
		return r.cfg.Endpoints.Addr(spec.Protocol, spec.Scenario)
	}
	return r.cfg.Target.For(spec.Protocol)
}

// scraperOf is the scraper of the server that answers spec's calls: the
// target's, or for an endpoint cell its endpoint's; nil when that server's
// metrics are not read (then its CPU per call is absent, never 0).
func (r *Session) scraperOf(spec plan.Spec) cpuSampler {
	return r.sides[spec.Protocol]
}

// openSides finds which of the endpoints' servers serve meteorbench's
// metrics, and warns of the others, and says how answers that are not
// decoded into typed values are (the probe calls settled it).
func (r *Session) openSides(ctx context.Context, warn func(string)) {
	for _, n := range r.cfg.Endpoints.Notes() {
		warn(n)
	}
	r.sides = map[api.Protocol]cpuSampler{}
	for _, p := range r.cfg.Endpoints.Protocols() {
		addrs := r.cfg.Endpoints.Addrs(p)
		if pids := r.cfg.ServerPID.For(p); pids != "" { // --server-pid: those processes, whatever its addresses
			r.sides[p] = &procSampler{pids: pids.List()}
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
