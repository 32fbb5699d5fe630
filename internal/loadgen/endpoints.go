package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/endpointcall"
)

// withEndpoints is the defaults of a run of the user's endpoints: their
// one scenario, over the protocols they have.
func (c Config) withEndpoints() Config {
	if len(c.Scenarios) == 0 {
		c.Scenarios = []api.Scenario{endpointcall.Scenario}
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
	return nil
}

// newClient opens the client of spec's protocol: the contract's adapter,
// or the user's endpoint's for an endpoint cell.
func (r *runner) newClient(spec cellSpec, o call.Options) (call.Client, error) {
	if spec.Scenario == endpointcall.Scenario && r.cfg.Endpoints != nil {
		return r.cfg.Endpoints.Client(spec.Protocol, o)
	}
	return openClient(spec, o)
}

// addrOf is the address spec's calls go to: the target's, or for an
// endpoint cell its endpoint's (an emulated link relays there).
func (r *runner) addrOf(spec cellSpec) string {
	if spec.Scenario == endpointcall.Scenario && r.cfg.Endpoints != nil {
		return r.cfg.Endpoints.Addr(spec.Protocol)
	}
	return r.cfg.Target.For(spec.Protocol)
}

// scraperOf is the scraper of the server that answers spec's calls: the
// target's, or for an endpoint cell its endpoint's; nil when that server's
// metrics are not read (then its CPU per call is absent, never 0).
func (r *runner) scraperOf(spec cellSpec) cpuSampler {
	return r.sides[spec.Protocol]
}

// DynamicDecodeNote is the warning of a run with a gRPC endpoint: its
// answers decode into dynamicpb messages, with no generated code. Measured
// on the 1000-record list (endpointcall's BenchmarkDecode, 2-core VM under
// load, two runs): generated code 2.8-3.1 ms, dynamicpb 13-18 ms, 4.7-5.9x.
// hyperpb v0.1.3 took 1.5 ms in the same benchmark run apart; not adopted
// (experimental, and built on goroutine-local storage).
const DynamicDecodeNote = "the gRPC endpoint's answers are decoded into dynamicpb messages (no generated code exists for a method found at run time), about 5x slower than generated code (the 1000 meteorites: 13-18 ms against 2.8-3.1 ms), so its client decode time and latency are those of a client without generated code"

// openSides finds which of the endpoints' servers serve meteorbench's
// metrics, and warns of the others.
func (r *runner) openSides(ctx context.Context, warn func(string)) {
	if r.cfg.Endpoints.GRPC != nil {
		warn(DynamicDecodeNote)
	}
	r.sides = map[api.Protocol]cpuSampler{}
	for _, p := range r.cfg.Endpoints.Protocols() {
		addr := r.cfg.Endpoints.Addr(p)
		s := newScraper(addr)
		if r.cfg.tlsOnly() { // as controlOverTLS does for the target's
			r.dialOverTLS(s.hc.Transport.(*http.Transport))
		}
		if _, err := s.scrape(ctx); err != nil {
			s.close()
			warn(fmt.Sprintf("server CPU per call not reported for the %s endpoint: %s has no usable /metrics (%v)", p.Title(), addr, err))
			continue
		}
		r.sides[p] = s
	}
}
