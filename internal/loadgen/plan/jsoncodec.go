package plan

import (
	"fmt"

	"github.com/meteorbench/meteorbench/internal/buildinfo"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
)

// JSONCodecs lists the JSON codecs Config.JSONCodecs (run --json-codec)
// can name, in display order: std, v2, sonic.
func JSONCodecs() []string { return jsoncodec.Names() }

func validJSONCodecs(cs []string) error {
	for _, c := range cs {
		if _, err := jsoncodec.Get(c); err != nil {
			return fmt.Errorf("json-codec: %w", err)
		}
	}
	return unique("json-codec", cs)
}

// envJSONCodecs are the versions of the libraries of the codecs other
// than std that c measures with (std's is the Go version); nil for none.
func envJSONCodecs(c Config) map[string]string {
	var out map[string]string
	for _, name := range c.JSONCodecs {
		jc, err := jsoncodec.Get(name)
		if err != nil || jc.Module == "" {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = buildinfo.ModuleVersion(jc.Module)
	}
	return out
}
