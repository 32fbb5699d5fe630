package session

import (
	"fmt"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
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
	cs := engine.NewCallers(client, servedScenarios(spec, mix), max)
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

// servedScenarios are the scenarios a cell calls, by part: its own, or
// its mix's.
func servedScenarios(spec plan.Spec, mix results.Mix) []api.Scenario {
	if spec.Scenario != results.MixScenario {
		return []api.Scenario{spec.Scenario}
	}
	out := make([]api.Scenario, len(mix))
	for i, p := range mix {
		out[i] = p.Scenario
	}
	return out
}

// servedKeys are the server's request counters ("protocol/method") a
// cell's calls count in.
func servedKeys(spec plan.Spec, mix results.Mix) []string {
	var out []string
	for _, sc := range servedScenarios(spec, mix) {
		out = append(out, string(spec.Protocol)+"/"+sc.Method())
	}
	return out
}

// servedCount is how many calls the server counted under keys between two
// samples, and the keys as one name.
func servedCount(keys []string, before, after *ServerSample) (int64, string) {
	n := 0.0
	for _, k := range keys {
		n += after.Requests[k] - before.Requests[k]
	}
	return int64(n), strings.Join(keys, "+")
}

// MixShortfall is how far below its offered rate a scenario of a mix may
// fall before the cell warns: the run --mix test holds each scenario
// within it below saturation.
const MixShortfall = 0.02

// mixStats are each scenario's figures of a mixed phase, and the
// warnings of the scenarios short of their rate.
func mixStats(mix results.Mix, ph engine.Result) ([]results.MixStat, []string) {
	if len(ph.Parts) != len(mix) || len(mix) == 0 {
		return nil, nil
	}
	secs := ph.Elapsed.Seconds()
	out := make([]results.MixStat, len(mix))
	var warns []string
	for i, p := range mix {
		t := ph.Parts[i].Tally
		s := results.MixStat{Scenario: p.Scenario, OfferedRate: p.Rate, Calls: t.Calls, Errors: t.Errors}
		if secs > 0 {
			s.AchievedRate = float64(t.Calls+t.Errors) / secs
		}
		if h := t.H[results.KindLatency]; h != nil {
			s.LatencyUS = engine.Latency(h, t.Sum[results.KindLatency])
		}
		if s.AchievedRate < (1-MixShortfall)*p.Rate {
			warns = append(warns, fmt.Sprintf("mix: %s achieved %s of the %s calls/s offered", p.Scenario, format.Rate(s.AchievedRate), format.Rate(p.Rate)))
		}
		out[i] = s
	}
	return out, warns
}
