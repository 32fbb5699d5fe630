package plan

import (
	"errors"
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

// Supports is what an engine Config.Engines (run --engine) names can
// measure, for its entry's refuse.
type Supports struct {
	Protocols []api.Protocol
	// Payload: the protocols over which it carries the user's payload
	// (--payload) instead of the meteorites.
	Payload     []api.Protocol
	Compression bool // --compress gzip
	Endpoints   bool // --endpoints: the user's own endpoints
	TLS         bool // --tls
	// HTTP3: the protocols it measures over HTTP/3 (--http-version 3,
	// QUIC).
	HTTP3 []api.Protocol
	// Streams: the protocols over which it measures the stream scenarios
	// (--scenario upload, chat, feed).
	Streams []api.Protocol
}

// An Engine is one entry of the registry: its name, what it refuses to
// measure and how it opens a protocol's client for a run.
type Engine struct {
	name string
	// named is true for an engine Config.Engines (run --engine) names; the
	// endpoint engine is the one a run of Config.Endpoints measures with.
	named bool
	// supports is a named engine's, for Supports.refuse and EngineSupports.
	supports Supports
	// refuse says what of c (protocol, HTTP version, payload, compression,
	// records, endpoints, TLS) the engine cannot measure, as one line that
	// names the flag: a plan that asks it is refused before its first cell
	// (Config.Validate), never measured as a target that does "not serve"
	// it. The one place that says what an engine measures.
	refuse func(c Config) error
	open   func(c Config, p api.Protocol, o call.Options) (call.Client, error)
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
// carry the meteorites only: with --payload they are refused. So does
// standard's gRPC over HTTP/3, connect-go's gRPC protocol (webcall) over
// quic-go's http3 in place of grpc-go (which has no HTTP/3): the contract's
// small, large, stream and post calls (refuseGRPC3).
//
// Every engine classifies a gRPC status with call.GRPCStatus.
var engines = []Engine{
	{
		name:     lean.Standard,
		named:    true,
		supports: standardSupports,
		refuse: func(c Config) error {
			if err := standardSupports.refuse(c); err != nil {
				return err
			}
			return refuseGRPC3(c)
		},
		open: func(_ Config, p api.Protocol, o call.Options) (call.Client, error) {
			switch p {
			case api.REST:
				return restcall.NewJSON(o)
			case api.RESTProtobuf:
				return restcall.NewProtobuf(o)
			case api.GRPC:
				if o.HTTPVersion() == call.HTTP3 {
					return webcall.NewClient(p, o) // connect-go's gRPC over HTTP/3
				}
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
		supports: leanSupports,
		refuse:   leanSupports.refuse,
		open:     func(_ Config, p api.Protocol, o call.Options) (call.Client, error) { return lean.New(p, o) },
	},
	{
		name:   EndpointEngine,
		refuse: refuseEndpoint,
		open:   func(c Config, p api.Protocol, o call.Options) (call.Client, error) { return c.Endpoints.Client(p, o) },
	},
}

// What the named engines measure.
var (
	standardSupports = Supports{Protocols: api.Protocols(), Payload: contractProtocols, Compression: true, Endpoints: true, TLS: true, HTTP3: api.Protocols(), Streams: api.Protocols()}
	leanSupports     = Supports{Protocols: api.Protocols(), Payload: contractProtocols, TLS: true, Streams: []api.Protocol{api.REST, api.RESTProtobuf, api.GRPC}}
)

// contractProtocols are the protocols that carry the user's payload
// (--payload): not a browser's (BrowserProtocol), whose adapters call the
// meteorites' methods only.
var contractProtocols = slices.DeleteFunc(api.Protocols(), BrowserProtocol)

// refuseGRPC3 is what standard refuses of gRPC over HTTP/3 (webcall's
// client with connect-go's gRPC protocol): the user's payload and the
// stream scenarios, which it does not carry.
func refuseGRPC3(c Config) error {
	if !slices.Contains(c.Protocols, api.GRPC) || !slices.Contains(c.Sweeps[call.SettingHTTPVersion], call.HTTP3) {
		return nil
	}
	if c.Payload != nil {
		return fmt.Errorf("payload %s not carried over gRPC at HTTP/3 (--payload, --http-version 3): leave one out", c.Payload.Name)
	}
	if c.Endpoints == nil {
		if i := slices.IndexFunc(c.Scenarios, api.Scenario.IsStream); i >= 0 {
			return fmt.Errorf("no %s over gRPC at HTTP/3 (--scenario, --http-version 3): not supported yet", c.Scenarios[i])
		}
	}
	return nil
}

// refuseEndpoint is the endpoint engine's refuse (package endpointcall:
// net/http and grpc-go over the requests the endpoints describe): REST
// and gRPC (Config.Endpoints' protocols, checked as --proto's values) over
// HTTP/1.1, uncompressed, the sizes the endpoints' requests say.
func refuseEndpoint(c Config) error {
	switch {
	case slices.ContainsFunc(c.Sweeps["http_version"], func(v string) bool { return v != call.HTTP11 }):
		return errors.New("http-version: your endpoints (--endpoints, --rest-url) are called over HTTP/1.1 only")
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

// validEngines refuses an engine the registry does not have, and asks
// each engine of c's cells (the ones named, standard when none is, the
// endpoint engine for a run of the user's endpoints) what of c it
// refuses: a named engine's refusal names the engine and the flag.
func validEngines(c Config) error {
	names := c.Engines
	if len(names) == 0 {
		names = []string{lean.Standard}
	}
	for _, name := range names {
		i := slices.IndexFunc(engines, func(e Engine) bool { return e.named && e.name == name })
		if i < 0 {
			return fmt.Errorf("engine: unknown value %q (want %s)", name, format.Names(Engines()))
		}
		if err := engines[i].refuse(c); err != nil {
			return fmt.Errorf("engine %s: %w", name, err)
		}
	}
	if c.Endpoints != nil {
		e, err := EngineOf(c, results.CellKey{})
		if err != nil {
			return err
		}
		if err := e.refuse(c); err != nil {
			return err
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
	if c.Payload != nil {
		if i := slices.IndexFunc(c.Protocols, func(p api.Protocol) bool { return !slices.Contains(s.Payload, p) }); i >= 0 {
			if len(s.Payload) == 0 {
				return fmt.Errorf("no payload of your own (--payload %s): use --engine standard", c.Payload.Name)
			}
			return fmt.Errorf("payload %s not carried over %s (--payload, --proto): leave one out", c.Payload.Name, c.Protocols[i])
		}
	}
	switch {
	case len(zs) > 0 && !s.Compression:
		return fmt.Errorf("no compression (--compress %s): it sends requests built once, uncompressed; use --engine standard", format.Names(zs))
	case c.Endpoints != nil && !s.Endpoints:
		return fmt.Errorf("no endpoints of your own (--endpoints): it calls the contract only; use --engine standard")
	case slices.Contains(c.TLS, true) && !s.TLS:
		return fmt.Errorf("no TLS (--tls): use --engine standard")
	case slices.Contains(c.Sweeps[call.SettingHTTPVersion], call.HTTP3) && len(s.HTTP3) == 0:
		return fmt.Errorf("no HTTP/3 (--http-version 3): use --engine standard")
	}
	if slices.Contains(c.Sweeps[call.SettingHTTPVersion], call.HTTP3) {
		if i := slices.IndexFunc(c.Protocols, func(p api.Protocol) bool { return !slices.Contains(s.HTTP3, p) }); i >= 0 {
			return fmt.Errorf("no HTTP/3 for %s (--http-version 3, --proto): it has %s", c.Protocols[i], format.Names(s.HTTP3))
		}
	}
	if c.Endpoints == nil && slices.ContainsFunc(c.Scenarios, api.Scenario.IsStream) { // (with --endpoints, the scenarios are the pairs' names)
		if i := slices.IndexFunc(c.Protocols, func(p api.Protocol) bool { return !slices.Contains(s.Streams, p) }); i >= 0 {
			return fmt.Errorf("no stream scenarios (--scenario upload, chat, feed) over %s (--proto): not supported yet; use --engine standard", c.Protocols[i])
		}
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
