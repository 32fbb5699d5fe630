package plan

import (
	"errors"
	"fmt"
	"slices"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Validate reports the first bad setting, as one line that starts with
// the setting's name as run's flag has it ("batch 0: must be at least
// 1"), so the command prefixes "--" and says no more: every check of a
// run's settings lives here, or in its dimension's validate, or (what an
// engine measures: protocol, HTTP version, payload, compression, records)
// in the engine's entry (engine.go).
func (c Config) Validate() error {
	if c.Target.IsZero() {
		return errors.New("no target")
	}
	if err := c.validateTarget(); err != nil { // targets.go
		return err
	}
	protocols, scenarios := api.Protocols(), api.AllScenarios()
	if c.Endpoints != nil {
		protocols, scenarios = c.Endpoints.Protocols(), c.Endpoints.Scenarios()
	}
	for _, p := range c.Protocols {
		if !slices.Contains(protocols, p) {
			return fmt.Errorf("proto: unknown value %q (want %s)", p, format.Names(protocols))
		}
	}
	if err := unique("proto", c.Protocols); err != nil {
		return err
	}
	for _, s := range c.Scenarios {
		if !slices.Contains(scenarios, s) && (s != results.MixScenario || len(c.Mix) == 0) {
			return fmt.Errorf("scenario: unknown value %q (want %s)", s, format.Names(scenarios))
		}
	}
	if err := unique("scenario", c.Scenarios); err != nil {
		return err
	}
	for _, b := range c.Batches {
		if b < 1 {
			return fmt.Errorf("batch %d: must be at least 1", b)
		}
	}
	for _, d := range planTable() {
		if d.validate == nil {
			continue
		}
		if err := d.validate(c); err != nil {
			return err
		}
	}
	for _, s := range []struct {
		name     string
		value    any
		negative bool
	}{
		{"duration", c.Duration, c.Duration < 0},
		{"iterations", c.Iterations, c.Iterations < 0},
		{"cell limit", c.CellLimit, c.CellLimit < 0},
		{"timeout", c.Timeout, c.Timeout < 0},
	} {
		if s.negative {
			return fmt.Errorf("%s %v: must not be negative", s.name, s.value)
		}
	}
	switch {
	case c.MaxWorkers < 0 || c.MaxWorkers > 0 && c.Rate == 0:
		return fmt.Errorf("max-workers %d: want a positive bound on an open loop's workers (with a rate)", c.MaxWorkers)
	case c.Repeat < 0:
		return fmt.Errorf("repeat %d: must be at least 1", c.Repeat)
	case c.Segment.Count < 0 || (c.Segment.Count > 1 && (c.Segment.Index < 1 || c.Segment.Index > c.Segment.Count)):
		return fmt.Errorf("segment %d/%d: want 1 <= i <= N", c.Segment.Index, c.Segment.Count)
	}
	return nil
}

func unique[T ~string](what string, names []T) error {
	seen := map[T]bool{}
	for _, n := range names {
		if seen[n] {
			return fmt.Errorf("%s %q given twice", what, n)
		}
		seen[n] = true
	}
	return nil
}
