package fit

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
)

// FromCells are the costs of traffic for every protocol cells has:
// from a mix cell of the traffic (or of the traffic scaled: the same
// scenarios in the same proportions), measured at its operating point,
// else from one cell per scenario, each cost times the scenario's rate.
// A protocol with no usable cells for some scenario is an error (one
// line) naming what is missing; notes say at what load each figure was
// taken.
func FromCells(cells []results.Cell, traffic results.Mix) (costs []Costs, notes []string, err error) {
	for _, p := range api.Protocols() {
		var mine []*results.Cell
		for i := range cells {
			if cells[i].Protocol == p && cells[i].Calls > 0 {
				mine = append(mine, &cells[i])
			}
		}
		if len(mine) == 0 {
			continue
		}
		c, err := mixCell(mine, traffic)
		if err != nil {
			return nil, nil, err
		}
		if c != nil {
			cs, err := fromMixCell(c, traffic)
			if err != nil {
				return nil, nil, err
			}
			costs = append(costs, cs)
			continue
		}
		cs, n, err := fromScenarioCells(p, mine, traffic)
		if err != nil {
			return nil, nil, err
		}
		costs, notes = append(costs, cs), append(notes, n...)
	}
	if len(costs) == 0 {
		return nil, nil, fmt.Errorf("no cell with a successful call of %s (a mix cell, or one per scenario)", traffic)
	}
	return costs, notes, nil
}

// mixCell is the mix cell of the traffic's proportions among cs; nil when
// none. Mix cells of it under other conditions too (a link swept) are
// ambiguous: an error.
func mixCell(cs []*results.Cell, traffic results.Mix) (*results.Cell, error) {
	var found *results.Cell
	for _, c := range cs {
		if c.Scenario != results.MixScenario {
			continue
		}
		m, err := results.ParseMixOf(c.Condition.Mix, nil) // a user's endpoints' pairs too
		if err != nil || !proportional(m, traffic) {
			continue
		}
		if found != nil && otherCondition(found, c) {
			return nil, fmt.Errorf("mix cells of %s over %s under several conditions (%s and %s): give a document of one condition", traffic, c.Protocol, found.Key(), c.Key())
		}
		found = c
	}
	return found, nil
}

// otherCondition reports whether two mix cells differ in more than their
// rates (the traffic scaled).
func otherCondition(a, b *results.Cell) bool {
	ka, kb := a.Condition, b.Condition
	ka.RateRequested, kb.RateRequested, ka.Mix, kb.Mix, ka.Concurrency, kb.Concurrency = 0, 0, "", "", 0, 0
	return ka != kb
}

// proportional reports whether m is traffic scaled, within 1% per part.
func proportional(m, traffic results.Mix) bool {
	if len(m) != len(traffic) {
		return false
	}
	f := m.Total() / traffic.Total()
	for _, p := range traffic {
		if math.Abs(m.Rate(p.Scenario)-f*p.Rate) > 0.01*f*p.Rate {
			return false
		}
	}
	return true
}

// perSecond is a per-call figure of c times rate calls/s, times unit, with
// the figure's interval when c was repeated.
func perSecond(c *results.Cell, f results.Figure, v, rate, unit float64) Value {
	out := Value{v, v, v}
	if iv, ok := c.CI[f]; ok && iv.N > 1 {
		out = Value{v, iv.Lo, iv.Hi}
	}
	return out.scaled(rate * unit)
}

// Units of perSecond.
const (
	usToCores = 1e-6    // µs of CPU per call × calls/s = cores
	bytesMbit = 8 / 1e6 // bytes per call × calls/s = Mbit/s
)

// fromMixCell is the costs of the traffic from a mix cell of its
// proportions: per call figures (averages over the mix) times its total.
func fromMixCell(c *results.Cell, traffic results.Mix) (Costs, error) {
	if c.ServerCPUUSPerCall == nil {
		return Costs{}, fmt.Errorf("cell %s has no server CPU per call (the server's /metrics were not read)", c.Key())
	}
	r := traffic.Total()
	out := Costs{
		Protocol:    c.Protocol,
		Cores:       perSecond(c, results.FigServerCPU, *c.ServerCPUUSPerCall, r, usToCores),
		ClientCores: perSecond(c, results.FigClientCPU, c.ClientCPUUSPerCall, r, usToCores),
		Sent:        perSecond(c, results.FigBytesSent, c.BytesPerCall.Sent, r, bytesMbit),
		Received:    perSecond(c, results.FigBytesReceived, c.BytesPerCall.Received, r, bytesMbit),
		MeasuredAt:  c.ServerUtilisation,
		Rate:        r,
		Loads:       []Load{LoadOf(c)},
	}
	out.addMemory(c)
	return out, nil
}

// addMemory takes the larger of c's server memory and what out has: the
// peak resident set (or the resident set at the end, without a peak) and
// the heap in use.
func (out *Costs) addMemory(c *results.Cell) {
	m := c.ServerMemory
	if m == nil {
		return
	}
	larger := func(dst **float64, v float64) {
		if *dst == nil || v > **dst {
			*dst = &v
		}
	}
	larger(&out.MemoryMiB, max(m.PeakRSSMiB, m.RSSMiB))
	larger(&out.HeapMiB, m.HeapMiB)
}

// fromScenarioCells is the costs of the traffic from one cell per scenario
// of protocol p: each scenario's per-call figures times its rate, summed.
// Several cells of one scenario (a sweep) are ambiguous: an error.
func fromScenarioCells(p api.Protocol, cs []*results.Cell, traffic results.Mix) (Costs, []string, error) {
	out := Costs{Protocol: p, Rate: traffic.Total()}
	var notes, loads []string
	for _, part := range traffic {
		var of []*results.Cell
		for _, c := range cs {
			if c.Scenario == part.Scenario {
				of = append(of, c)
			}
		}
		switch {
		case len(of) == 0:
			return Costs{}, nil, fmt.Errorf("no cell of %s over %s with a successful call (the traffic needs %s for each protocol, or a mix cell of it)",
				part.Scenario, p, scenarioList(traffic))
		case len(of) > 1:
			return Costs{}, nil, fmt.Errorf("%d cells of %s over %s (%s and %s...): give a document of one condition", len(of), part.Scenario, p, of[0].Key(), of[1].Key())
		case of[0].ServerCPUUSPerCall == nil:
			return Costs{}, nil, fmt.Errorf("cell %s has no server CPU per call (the server's /metrics were not read)", of[0].Key())
		}
		c := of[0]
		out.Cores = out.Cores.plus(perSecond(c, results.FigServerCPU, *c.ServerCPUUSPerCall, part.Rate, usToCores))
		out.ClientCores = out.ClientCores.plus(perSecond(c, results.FigClientCPU, c.ClientCPUUSPerCall, part.Rate, usToCores))
		out.Sent = out.Sent.plus(perSecond(c, results.FigBytesSent, c.BytesPerCall.Sent, part.Rate, bytesMbit))
		out.Received = out.Received.plus(perSecond(c, results.FigBytesReceived, c.BytesPerCall.Received, part.Rate, bytesMbit))
		out.addMemory(c)
		load := fmt.Sprintf("%s at %s", part.Scenario, c.Condition.Label())
		if u := c.ServerUtilisation; u != nil {
			load += fmt.Sprintf(", server %s busy", pct(*u))
		}
		loads = append(loads, load)
	}
	notes = append(notes, fmt.Sprintf("%s: costs per call from one cell per scenario, each measured alone (%s), not at the mix's operating point: CPU per call depends on load",
		p.Title(), strings.Join(loads, "; ")))
	return out, notes, nil
}

func scenarioList(m results.Mix) string {
	var s []string
	for _, p := range m {
		if !slices.Contains(s, string(p.Scenario)) {
			s = append(s, string(p.Scenario))
		}
	}
	return strings.Join(s, ", ")
}
