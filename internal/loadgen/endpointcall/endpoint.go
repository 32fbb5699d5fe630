// Package endpointcall holds the adapters of a user's own endpoints: a
// REST URL (any method, body and headers; the answer must be 2xx and JSON)
// and a gRPC method resolved from a .proto or server reflection (the
// answer must be status OK and decode as the method's output type). They
// run in the same harness as the contract's adapters: the same counted
// connections, timers and error classes; only what is sent and checked
// differs.
package endpointcall

import (
	"fmt"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// Scenario is the scenario of an endpoint cell: the user's call, as
// opposed to the contract's four.
const Scenario api.Scenario = "endpoint"

// Endpoints are the endpoints a run measures instead of the contract's
// calls: a REST URL, a gRPC method, or both (then compared, as REST and
// gRPC are for the contract). Loaded once (ParseREST, LoadGRPC) and
// read-only after.
type Endpoints struct {
	REST *REST
	GRPC *GRPC
}

// Protocols are the protocols the endpoints are measured over: rest for
// the URL, grpc for the method.
func (e *Endpoints) Protocols() []api.Protocol {
	var out []api.Protocol
	if e.REST != nil {
		out = append(out, api.REST)
	}
	if e.GRPC != nil {
		out = append(out, api.GRPC)
	}
	return out
}

// Name names the endpoints in a cell's condition and its verdict:
// "GET http://127.0.0.1:8080/items vs items.Items/List at 127.0.0.1:9090".
func (e *Endpoints) Name() string {
	switch {
	case e.REST != nil && e.GRPC != nil:
		return e.REST.Name() + " vs " + e.GRPC.Name()
	case e.REST != nil:
		return e.REST.Name()
	case e.GRPC != nil:
		return e.GRPC.Name()
	}
	return ""
}

// Addr is the host:port protocol p's endpoint is at ("" for none): where
// the harness looks for the server's metrics.
func (e *Endpoints) Addr(p api.Protocol) string {
	switch {
	case p == api.REST && e.REST != nil:
		return e.REST.URL.Host
	case p == api.GRPC && e.GRPC != nil:
		return e.GRPC.Addr
	}
	return ""
}

// Client opens protocol p's client to its endpoint over o's counted
// connections (o.Target is ignored: each endpoint names its own).
func (e *Endpoints) Client(p api.Protocol, o call.Options) (call.Client, error) {
	o.Target = e.Addr(p)
	if o.Target == "" {
		return nil, fmt.Errorf("endpointcall: no %s endpoint", p)
	}
	if p == api.REST {
		return newRESTClient(e.REST, o)
	}
	return newGRPCClient(e.GRPC, o)
}
