// Package endpointcall holds the adapters of a user's own endpoints: a
// REST URL (any method, body and headers; the answer must be 2xx and JSON)
// and a gRPC method resolved from a .proto or server reflection (the
// answer must be status OK and decode as the method's output type). They
// run in the same harness as the contract's adapters: the same counted
// connections, timers and error classes; only what is sent and checked
// differs.
//
// Endpoints come as named pairs (a REST request and the gRPC call that
// answers the same question): one from run's flags, named Scenario, or
// several from an endpoints file (LoadFile). A pair's name plays the part
// of a scenario: a cell per pair and protocol, one verdict per pair, and
// a --mix over the pairs.
//
// Answers decode into typed values whenever a schema is known: the gRPC
// method's output with the compiled codec of internal/payload (as fast as
// generated code; dynamicpb only for what it cannot handle), and the REST
// answer into the same message's JSON mapping. Decoding says which.
package endpointcall

import (
	"fmt"
	"slices"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Scenario is the scenario of the one pair run's flags give: the user's
// call, as opposed to the contract's four.
const Scenario api.Scenario = "endpoint"

// Pair is one named pair of endpoints: a REST request, a gRPC call, or
// both (then compared, as REST and gRPC are for the contract), and the
// rate the endpoints file gives it in the traffic (0: none).
type Pair struct {
	Name api.Scenario
	REST *REST
	GRPC *GRPC
	Rate float64
}

// Protocols are the protocols the pair is measured over: rest for the
// URL, grpc for the method.
func (p *Pair) Protocols() []api.Protocol {
	var out []api.Protocol
	if p.REST != nil {
		out = append(out, api.REST)
	}
	if p.GRPC != nil {
		out = append(out, api.GRPC)
	}
	return out
}

// Describe names the pair's endpoints in a cell's condition and its
// verdict: "GET http://127.0.0.1:8080/items vs items.Items/List at
// 127.0.0.1:9090".
func (p *Pair) Describe() string {
	var parts []string
	if p.REST != nil {
		parts = append(parts, p.REST.Name())
	}
	if p.GRPC != nil {
		parts = append(parts, p.GRPC.Name())
	}
	return strings.Join(parts, " vs ")
}

// Addr is the host:port protocol pr's endpoint is at ("" for none).
func (p *Pair) Addr(pr api.Protocol) string {
	switch {
	case pr == api.REST && p.REST != nil:
		return p.REST.URL.Host
	case pr == api.GRPC && p.GRPC != nil:
		return p.GRPC.Addr
	}
	return ""
}

// Decoding is how protocol pr's client decodes the pair's answers.
func (p *Pair) Decoding(pr api.Protocol) results.Decoding {
	switch {
	case pr == api.REST && p.REST != nil:
		return p.REST.Decoding()
	case pr == api.GRPC && p.GRPC != nil:
		return p.GRPC.Decoding()
	}
	return ""
}

// Endpoints are the pairs a run measures instead of the contract's calls.
// Loaded once (Single, LoadFile) and read-only after, but for how each
// REST endpoint decodes, settled by its first answer.
type Endpoints struct {
	Pairs []*Pair
	// File is the endpoints file they came from ("" for run's flags).
	File string
}

// Single is the one pair run's flags give, named Scenario.
func Single(rest *REST, grpc *GRPC) *Endpoints {
	return &Endpoints{Pairs: []*Pair{{Name: Scenario, REST: rest, GRPC: grpc}}}
}

// Scenarios are the pairs' names, in the order given.
func (e *Endpoints) Scenarios() []api.Scenario {
	out := make([]api.Scenario, len(e.Pairs))
	for i, p := range e.Pairs {
		out[i] = p.Name
	}
	return out
}

// Pair is the pair named sc, or nil.
func (e *Endpoints) Pair(sc api.Scenario) *Pair {
	for _, p := range e.Pairs {
		if p.Name == sc {
			return p
		}
	}
	return nil
}

// called is the pair a caller of scenario sc calls: the pair named sc,
// or for a single pair that one; nil for a mix of several.
func (e *Endpoints) called(sc api.Scenario) *Pair {
	if p := e.Pair(sc); p != nil {
		return p
	}
	if len(e.Pairs) == 1 {
		return e.Pairs[0]
	}
	return nil
}

// Protocols are the protocols any pair is measured over.
func (e *Endpoints) Protocols() []api.Protocol {
	var out []api.Protocol
	for _, pr := range api.Protocols() {
		if slices.ContainsFunc(e.Pairs, func(p *Pair) bool { return slices.Contains(p.Protocols(), pr) }) {
			out = append(out, pr)
		}
	}
	return out
}

// Name names the endpoints of scenario sc (a pair, or a mix of pairs) in
// a cell's condition: the pair's endpoints, or the endpoints file's name
// for a mix of several pairs.
func (e *Endpoints) Name(sc api.Scenario) string {
	if p := e.called(sc); p != nil {
		return p.Describe()
	}
	return e.File
}

// Addrs are the distinct addresses protocol pr's endpoints are at, in the
// pairs' order.
func (e *Endpoints) Addrs(pr api.Protocol) []string {
	var out []string
	for _, p := range e.Pairs {
		if a := p.Addr(pr); a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// Addr is the host:port protocol pr's calls of scenario sc go to: the
// pair's, or for a mix the one address all pairs share ("" when they are
// at several).
func (e *Endpoints) Addr(pr api.Protocol, sc api.Scenario) string {
	if p := e.Pair(sc); p != nil {
		return p.Addr(pr)
	}
	if as := e.Addrs(pr); len(as) == 1 {
		return as[0]
	}
	return ""
}

// Decoding is how protocol pr's client decodes the answers of scenario
// sc: the pair's way, or for a mix the least typed of its pairs'.
func (e *Endpoints) Decoding(pr api.Protocol, sc api.Scenario) results.Decoding {
	if p := e.Pair(sc); p != nil {
		return p.Decoding(pr)
	}
	var out results.Decoding
	for _, p := range e.Pairs {
		if d := p.Decoding(pr); d.Generic() || out == "" {
			out = d
		}
	}
	return out
}

// DecodingWhy is why protocol pr's client decodes pair sc's answers (or,
// for a mix, the first generic pair's) generically; "" when typed.
func (e *Endpoints) DecodingWhy(pr api.Protocol, sc api.Scenario) string {
	pairs := e.Pairs
	if p := e.Pair(sc); p != nil {
		pairs = []*Pair{p}
	}
	for _, p := range pairs {
		switch {
		case pr == api.REST && p.REST != nil && p.REST.Decoding().Generic():
			return p.REST.GenericWhy()
		case pr == api.GRPC && p.GRPC != nil && p.GRPC.dynamic != "":
			return p.GRPC.dynamic
		}
	}
	return ""
}

// Notes say how each pair's answers are decoded where that is not typed:
// for the run's warnings, once its probe calls settled it.
func (e *Endpoints) Notes() []string {
	var out []string
	for _, p := range e.Pairs {
		who := ""
		if len(e.Pairs) > 1 || p.Name != Scenario {
			who = " of " + string(p.Name)
		}
		if p.GRPC != nil && p.GRPC.dynamic != "" {
			out = append(out, fmt.Sprintf("the gRPC answers%s are decoded with dynamicpb, several times slower than generated code: %s", who, p.GRPC.dynamic))
		}
		if p.REST != nil {
			if why := p.REST.GenericWhy(); why != "" {
				out = append(out, fmt.Sprintf("the REST answers%s are decoded into generic JSON values (map[string]any), not typed ones: %s", who, why))
			}
		}
	}
	return out
}

// Client opens protocol pr's client over o's counted connections (o.Target
// is ignored: each endpoint names its own). Its Caller(sc) calls pair sc;
// pairs at one address share its connections, as a mix's scenarios do.
func (e *Endpoints) Client(pr api.Protocol, o call.Options) (call.Client, error) {
	if len(e.Addrs(pr)) == 0 {
		return nil, fmt.Errorf("endpointcall: no %s endpoint", pr)
	}
	if pr == api.REST {
		return newRESTClient(e, o)
	}
	return &grpcClient{e: e, o: o, conns: map[string]*grpcConns{}}, nil
}
