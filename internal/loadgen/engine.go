package loadgen

import (
	"fmt"
	"slices"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/lean"
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
}

// An engine is one entry of the registry: its name, what it supports and
// how it opens a protocol's client.
type engine struct {
	name     string
	supports Supports
	open     func(p api.Protocol, o call.Options) (call.Client, error)
}

// engines is the registry: every engine the load generator has, in
// display order, and the one place that says what each supports.
//
//   - standard: net/http and grpc-go, every answer decoded, as a user's
//     own Go clients pay.
//   - lean (package lean): the generator's CPU per call as low as wrk's and
//     h2load's, answers decoded on a sample; requests are built once,
//     uncompressed, for the contract's calls (the meteorites or the
//     user's payload) only. Its connections are wire.Dialer's, which does
//     the TLS handshake (ALPN h2 for gRPC, http/1.1 for REST).
var engines = []engine{
	{
		name:     lean.Standard,
		supports: Supports{Protocols: api.Protocols(), Payload: true, Compression: true, Endpoints: true, TLS: true},
		open:     func(p api.Protocol, o call.Options) (call.Client, error) { return protocols[p](o) },
	},
	{
		name:     lean.Lean,
		supports: Supports{Protocols: api.Protocols(), Payload: true, TLS: true},
		open:     lean.New,
	},
}

// Engines lists the engines Config.Engines (run --engine) can name, in
// display order.
func Engines() []string {
	out := make([]string, len(engines))
	for i, e := range engines {
		out[i] = e.name
	}
	return out
}

// EngineSupports is what the engine named supports; false when there is
// no such engine.
func EngineSupports(name string) (Supports, bool) {
	i := slices.IndexFunc(engines, func(e engine) bool { return e.name == name })
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
			return fmt.Errorf("unknown engine %q (want %s)", name, format.Names(Engines()))
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
	}
	return nil
}

// openClient opens the client of a cell: its protocol's, over its engine.
func openClient(spec cellSpec, o call.Options) (call.Client, error) {
	name := spec.Engine
	if name == "" {
		name = lean.Standard
	}
	i := slices.IndexFunc(engines, func(e engine) bool { return e.name == name })
	if i < 0 {
		return nil, fmt.Errorf("unknown engine %q", spec.Engine)
	}
	return engines[i].open(spec.Protocol, o)
}
