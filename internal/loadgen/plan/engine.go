package plan

import (
	"fmt"
	"slices"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/grpccall"
	"github.com/meteorbench/meteorbench/internal/loadgen/lean"
	"github.com/meteorbench/meteorbench/internal/loadgen/restcall"
	"github.com/meteorbench/meteorbench/internal/loadgen/webcall"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Supports is what an engine can measure. A plan that asks an engine for
// anything else is refused before its first cell (Config.Validate), never
// measured as a target that does "not serve" it.
type Supports struct {
	Protocols   []api.Protocol
	Payload     bool // --payload: the user's payload instead of the meteorites
	Compression bool // --compress gzip
	Endpoints   bool // --endpoints: the user's own endpoints
	TLS         bool // --tls
	Streams     bool // the stream scenarios (--scenario upload, chat, feed)
}

// An Engine is one entry of the registry: its name, what it supports and
// how it opens a protocol's client for a run.
type Engine struct {
	name     string
	supports Supports
	// named is true for an engine Config.Engines (run --engine) names; the
	// endpoint engine is the one a run of Config.Endpoints measures with.
	named bool
	open  func(c Config, p api.Protocol, o call.Options) (call.Client, error)
}

// EndpointEngine names the engine of the user's own endpoints
// (Config.Endpoints): net/http and grpc-go, as standard, over the
// requests the endpoints describe.
const EndpointEngine = "endpoint"

// engines is the registry: every engine the load generator has, in
// display order, and the one place that says what each supports and how
// it makes a client (EngineOf picks one).
//
//   - standard: net/http and grpc-go, every answer decoded, as a user's
//     own Go clients pay.
//   - lean (package lean): the generator's CPU per call as low as wrk's and
//     h2load's, answers decoded on a sample; requests are built once,
//     uncompressed, for the contract's calls (the meteorites or the
//     user's payload) only. Its connections are wire.Dialer's, which does
//     the TLS handshake (ALPN h2 for gRPC, the cell's HTTP version's for
//     the others).
//   - endpoint (package endpointcall): the user's own REST endpoint and
//     gRPC method, picked by the run's Endpoints rather than by name; no
//     gRPC-Web or Connect.
//
// gRPC-Web and Connect (standard: package webcall, on connect-go; lean)
// carry the meteorites only: with --payload they are refused (Validate).
//
// Every engine classifies a gRPC status with call.GRPCStatus.
var engines = []Engine{
	{
		name:     lean.Standard,
		named:    true,
		supports: Supports{Protocols: api.Protocols(), Payload: true, Compression: true, Endpoints: true, TLS: true, Streams: true},
		open: func(_ Config, p api.Protocol, o call.Options) (call.Client, error) {
			switch p {
			case api.REST:
				return restcall.NewJSON(o)
			case api.RESTProtobuf:
				return restcall.NewProtobuf(o)
			case api.GRPC:
				return grpccall.New(o)
			case api.GRPCWeb, api.Connect:
				return webcall.NewClient(p, o)
			}
			return nil, fmt.Errorf("standard engine: no protocol %q", p)
		},
	},
	{
		name:     lean.Lean,
		named:    true,
		supports: Supports{Protocols: api.Protocols(), Payload: true, TLS: true},
		open:     func(_ Config, p api.Protocol, o call.Options) (call.Client, error) { return lean.New(p, o) },
	},
	{
		name:     EndpointEngine,
		supports: Supports{Protocols: []api.Protocol{api.REST, api.GRPC}, Endpoints: true, TLS: true},
		open:     func(c Config, p api.Protocol, o call.Options) (call.Client, error) { return c.Endpoints.Client(p, o) },
	},
}

// Engines lists the engines Config.Engines (run --engine) can name, in
// display order.
func Engines() []string {
	var out []string
	for _, e := range engines {
		if e.named {
			out = append(out, e.name)
		}
	}
	return out
}

// EngineSupports is what the engine named supports; false when there is
// no such engine for Config.Engines to name.
func EngineSupports(name string) (Supports, bool) {
	i := slices.IndexFunc(engines, func(e Engine) bool { return e.named && e.name == name })
	if i < 0 {
		return Supports{}, false
	}
	return engines[i].supports, true
}

// validEngines refuses an engine the registry does not have, and an
// engine asked for what it does not support, naming the engine and the
// flag.
func validEngines(c Config) error {
	for _, name := range c.Engines {
		s, ok := EngineSupports(name)
		if !ok {
			return fmt.Errorf("engine: unknown value %q (want %s)", name, format.Names(Engines()))
		}
		if err := s.refuse(c); err != nil {
			return fmt.Errorf("engine %s: %w", name, err)
		}
	}
	return unique("engine", c.Engines)
}

// refuse says what of c an engine of s cannot measure, naming the flag.
func (s Supports) refuse(c Config) error {
	for _, p := range c.Protocols {
		if !slices.Contains(s.Protocols, p) {
			return fmt.Errorf("no protocol %s (--proto): it has %s", p, format.Names(s.Protocols))
		}
	}
	zs := slices.DeleteFunc(slices.Clone(c.Compress), func(z string) bool { return z == CompressNone })
	switch {
	case c.Payload != nil && !s.Payload:
		return fmt.Errorf("no payload of your own (--payload %s): use --engine standard", c.Payload.Name)
	case len(zs) > 0 && !s.Compression:
		return fmt.Errorf("no compression (--compress %s): it sends requests built once, uncompressed; use --engine standard", format.Names(zs))
	case c.Endpoints != nil && !s.Endpoints:
		return fmt.Errorf("no endpoints of your own (--endpoints): it calls the contract only; use --engine standard")
	case slices.Contains(c.TLS, true) && !s.TLS:
		return fmt.Errorf("no TLS (--tls): use --engine standard")
	case c.Endpoints == nil && slices.ContainsFunc(c.Scenarios, api.Scenario.IsStream) && !s.Streams: // (with --endpoints, the scenarios are the pairs' names)
		return fmt.Errorf("no stream scenarios (--scenario upload, chat, feed): not supported yet; use --engine standard")
	}
	return nil
}

// EngineOf picks the engine of a cell of c's, the one place that does:
// the endpoint engine for a run of the user's endpoints, else the one the
// cell's condition names (standard when it names none).
func EngineOf(c Config, k results.CellKey) (Engine, error) {
	name := k.Engine
	switch {
	case c.Endpoints != nil:
		name = EndpointEngine
	case name == "":
		name = lean.Standard
	}
	i := slices.IndexFunc(engines, func(e Engine) bool { return e.name == name })
	if i < 0 {
		return Engine{}, fmt.Errorf("unknown engine %q", k.Engine)
	}
	return engines[i], nil
}

// Name is the engine's name.
func (e Engine) Name() string { return e.name }

// Client opens the engine's client of protocol p for a cell of c's with
// options o.
func (e Engine) Client(c Config, p api.Protocol, o call.Options) (call.Client, error) {
	return e.open(c, p, o)
}
