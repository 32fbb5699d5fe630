package plan

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/meteorbench/meteorbench/internal/format"
)

// validateEndpoints refuses endpoints a run cannot measure; what the
// endpoint engine measures of the rest of c is its entry's (engine.go).
func (c Config) validateEndpoints() error {
	switch {
	case c.Endpoints == nil:
		return nil
	case len(c.Endpoints.Protocols()) == 0:
		return errors.New("endpoints: neither a REST URL nor a gRPC method")
	}
	names := c.Endpoints.Scenarios()
	for _, part := range c.Mix {
		if !slices.Contains(names, part.Scenario) {
			return fmt.Errorf("mix %s: %s is no pair of the endpoints (they are %s)", c.Mix, part.Scenario, format.Names(names))
		}
	}
	for _, l := range c.Links {
		for _, p := range c.Endpoints.Protocols() {
			if as := c.Endpoints.Addrs(p); !l.None() && len(as) > 1 {
				return fmt.Errorf("link %s: relays to one address, and the %s endpoints are at %d (%s)", l, p, len(as), strings.Join(as, ", "))
			}
		}
	}
	return nil
}
