package job

import (
	"errors"
	"fmt"

	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
)

// CheckConfig is what `meteorbench check` asks: a target (with its token
// and TLS), the protocols and HTTP versions (run's --proto and
// --http-version, ProtocolFlags) and the format of the answer, table or
// json.
type CheckConfig struct {
	plan.Config
	Format string
}

// Validate refuses a check that cannot be asked, and what run refuses
// (plan.Config.Validate); the messages name check's flags.
func (c CheckConfig) Validate() error {
	if c.Target.IsZero() {
		return errors.New("--target: required (HOST:PORT, or rest=HOST:PORT,grpc=HOST:PORT)")
	}
	if c.Format != "table" && c.Format != "json" {
		return fmt.Errorf("--format %q: want table or json", c.Format)
	}
	if len(c.TLS) > 1 {
		return errors.New("--tls both: check asks over one transport, on or off")
	}
	if err := c.Config.Validate(); err != nil {
		return fmt.Errorf("--%w", err)
	}
	return nil
}
