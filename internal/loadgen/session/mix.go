package session

import (
	"fmt"

	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/summary"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Mixed traffic (Config.Mix, run --mix): the scenarios of the mix at once,
// open loop, each at its own rate, over one client per protocol (so over
// the same connections: a small call may wait behind a large one on an
// HTTP/1.1 connection, or share an HTTP/2 connection with it). A mix is
// one cell per protocol and condition, of scenario results.MixScenario,
// whose figures are those of all its calls together and whose Mix holds
// each scenario's rates and latency.

// mixOf is the traffic of spec's cell, read from its key (the plan wrote
// it with Mix.String); nil for a cell of one scenario.
func mixOf(spec plan.Spec) (results.Mix, error) {
	if spec.Scenario != results.MixScenario {
		return nil, nil
	}
	m, err := results.ParseMixOf(spec.Mix, nil)
	if err != nil {
		return nil, fmt.Errorf("traffic %q: %w", spec.Mix, err)
	}
	return m, nil
}

// partCallers are a cell's Callers for workers workers, growing up to
// max (0: no growth): one part, the cell's scenario, or each of a mix's
// scenarios.
func partCallers(client call.Client, spec plan.Spec, mix results.Mix, workers, max int) (*engine.Callers, error) {
	cs := engine.NewCallers(client, summary.Scenarios(spec, mix), max)
	for range workers {
		if _, err := cs.Add(); err != nil {
			return nil, err
		}
	}
	return cs, nil
}

// schedules are a cell's open-loop schedules by part: the share's, or each
// of a mix's scenarios at its rate.
func schedules(mix results.Mix, sh engine.Share) []engine.Schedule {
	if len(mix) == 0 {
		return []engine.Schedule{sh.Sched}
	}
	out := make([]engine.Schedule, len(mix))
	for i, p := range mix {
		out[i] = engine.Schedule{Rate: p.Rate}
	}
	return out
}
