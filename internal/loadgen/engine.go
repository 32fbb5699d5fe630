package loadgen

import (
	"fmt"
	"slices"

	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/lean"
)

// Engines lists the engines Config.Engines (run --engine) can name:
// standard (net/http and grpc-go, every answer decoded, as a user's own Go
// clients pay) and lean (package lean: the generator's CPU per call as low
// as wrk's and h2load's, answers decoded on a sample).
func Engines() []string { return lean.Engines() }

func validEngines(c Config) error {
	for _, e := range c.Engines {
		if !slices.Contains(lean.Engines(), e) {
			return fmt.Errorf("unknown engine %q (want standard or lean)", e)
		}
		if e == lean.Lean && c.Endpoints != nil {
			return fmt.Errorf("engine lean calls the contract only: your own endpoints are called by the standard engine")
		}
		if e == lean.Lean && slices.ContainsFunc(c.Compress, func(z string) bool { return z != CompressNone }) {
			return fmt.Errorf("engine lean: no compression (--compress %s): it sends requests built once, uncompressed", format.Names(c.Compress))
		}
	}
	return unique("engine", c.Engines)
}

// openClient opens the client of a cell: its protocol's, over its engine.
func openClient(spec cellSpec, o call.Options) (call.Client, error) {
	if spec.Engine == lean.Lean {
		return lean.New(spec.Protocol, o)
	}
	return protocols[spec.Protocol](o)
}
