// Package summary turns what a cell measured into its results.Cell: the
// figures of a measured phase (Cell: per successful call, the server's
// counters read around it, the mix's parts), the cell's self-checks
// (Check: Little's law, abandoned calls, the generator's own lateness,
// answers too small for their records), whether the load generator was
// the bottleneck (GeneratorBottleneck, SharesCores), and a cell's repeats
// merged into one (Repeats: medians, confidence intervals, pooled
// histograms). The reporters see only what comes out.
package summary

import (
	"fmt"
	"math"

	"github.com/meteorbench/meteorbench/internal/cpubreakdown"
	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/stats"
)

// Measured is one measurement of a cell, before repeats are merged: its
// figures and its raw histograms (merged over repeats, then encoded).
type Measured struct {
	Spec  plan.Spec
	Cell  results.Cell
	Hists engine.Hists
	// Profile is the window's CPU profiles (run --profile); nil when the
	// window was not profiled.
	Profile *cpubreakdown.Window
}

// Repeats groups measurements by cell, in the order cells were first
// measured. A cell measured once is kept as is; a repeated cell gets the
// median of each figure over its repeats (the same median stats.Summarize
// gives, so Cell and CI agree), totals of its counts, the per-repeat
// figures in Repeats and their confidence intervals in CI.
//
// Every cell keeps its histograms (Cell.Histograms), those of a repeated
// cell being of all its repeats together, so that documents merge exactly.
func Repeats(ms []Measured) []results.Cell {
	var order []results.CellKey
	groups := map[results.CellKey][]results.Cell{}
	pooled := map[results.CellKey]*engine.Hists{}
	for _, m := range ms {
		k := m.Cell.CellKey
		if _, ok := groups[k]; !ok {
			order = append(order, k)
			pooled[k] = &engine.Hists{}
		}
		groups[k] = append(groups[k], m.Cell)
		pooled[k].Add(m.Hists)
	}
	out := make([]results.Cell, 0, len(order))
	for _, k := range order {
		g := groups[k]
		c := g[0]
		if len(g) > 1 {
			c = mergeCell(g)
		}
		h, err := pooled[k].Encode()
		if err != nil {
			c.Warnings = append(c.Warnings, fmt.Sprintf("histograms not kept (this cell cannot be merged exactly): %v", err))
		}
		c.Histograms = h
		out = append(out, c)
	}
	return out
}

// median is stats.Summarize's median.
func median(vs []float64) float64 { return stats.Summarize(vs).Median }

// medianOf is the median of f over the repeats.
func medianOf(cs []results.Cell, f func(*results.Cell) float64) float64 {
	vs := make([]float64, len(cs))
	for i := range cs {
		vs[i] = f(&cs[i])
	}
	return median(vs)
}

func mergeLatency(cs []results.Cell, f func(*results.Cell) *results.Latency) *results.Latency {
	for i := range cs {
		if f(&cs[i]) == nil {
			return nil
		}
	}
	l := results.Latency{
		P50:  medianOf(cs, func(c *results.Cell) float64 { return f(c).P50 }),
		P90:  medianOf(cs, func(c *results.Cell) float64 { return f(c).P90 }),
		P99:  medianOf(cs, func(c *results.Cell) float64 { return f(c).P99 }),
		P999: medianOf(cs, func(c *results.Cell) float64 { return f(c).P999 }),
		Max:  medianOf(cs, func(c *results.Cell) float64 { return f(c).Max }),
		Mean: medianOf(cs, func(c *results.Cell) float64 { return f(c).Mean }),
	}
	return &l
}

func mergeCell(cs []results.Cell) results.Cell {
	m := results.Cell{CellKey: cs[0].CellKey, Mode: cs[0].Mode, Share: cs[0].Share, Target: cs[0].Target, ClientDecoding: cs[0].ClientDecoding, ClientDecodingWhy: cs[0].ClientDecodingWhy}
	m.Connections = int(math.Round(medianOf(cs, func(c *results.Cell) float64 { return float64(c.Connections) })))
	for i := range cs { // the most any repeat needed
		m.WorkersUsed = max(m.WorkersUsed, cs[i].WorkersUsed)
	}
	for i := range cs {
		c := &cs[i]
		m.AddCounts(c)
		m.DurationS += c.DurationS
		for _, w := range c.Warnings {
			m.Warnings = append(m.Warnings, fmt.Sprintf("repeat %d: %s", i+1, w))
		}
		// A window's contradiction taints the cell: its figures are
		// medians over every window.
		for _, why := range c.Suspect {
			m.Suspect = append(m.Suspect, fmt.Sprintf("repeat %d: %s", i+1, why))
		}
	}
	if wake := mergeLatency(cs, func(c *results.Cell) *results.Latency {
		if c.GeneratorDelayUS == nil {
			return nil
		}
		return &c.GeneratorDelayUS.Wake
	}); wake != nil {
		m.GeneratorDelayUS = &results.GeneratorDelay{Wake: *wake, Handoff: mergeLatency(cs, func(c *results.Cell) *results.Latency {
			return c.GeneratorDelayUS.Handoff
		})}
	}
	if u := mergeOptional(cs, func(c *results.Cell) *float64 { return c.ServerUtilisation }); u != nil {
		m.ServerUtilisation = u
	}
	m.CallsPerS = medianOf(cs, func(c *results.Cell) float64 { return c.CallsPerS })
	m.MBPerS = medianOf(cs, func(c *results.Cell) float64 { return c.MBPerS })
	if m.RateRequested > 0 {
		m.RateAchieved = medianOf(cs, func(c *results.Cell) float64 { return c.RateAchieved })
	}
	for _, k := range results.LatencyKinds { // each a median over the repeats that have it
		k.Set(&m, mergeLatency(cs, k.Get))
	}
	m.Distribution = mergeDistribution(cs)
	m.Mix = mergeMix(cs)
	m.ServerMemory = mergeServerMemory(cs)
	// Time per batch only from the repeats that completed a batch: a repeat
	// too short for one has no figure, which is not a figure of 0.
	var withBatches []results.Cell
	for i := range cs {
		if cs[i].Batches > 0 {
			withBatches = append(withBatches, cs[i])
		}
	}
	if len(withBatches) > 0 {
		m.BatchMS = results.Spread{
			Mean:   medianOf(withBatches, func(c *results.Cell) float64 { return c.BatchMS.Mean }),
			Stddev: medianOf(withBatches, func(c *results.Cell) float64 { return c.BatchMS.Stddev }),
		}
	}
	m.BytesPerCall = results.Bytes{
		Sent:     medianOf(cs, func(c *results.Cell) float64 { return c.BytesPerCall.Sent }),
		Received: medianOf(cs, func(c *results.Cell) float64 { return c.BytesPerCall.Received }),
	}
	m.ClientCPUUSPerCall = medianOf(cs, func(c *results.Cell) float64 { return c.ClientCPUUSPerCall })
	server := true
	for i := range cs {
		server = server && cs[i].ServerCPUUSPerCall != nil
	}
	if server {
		v := medianOf(cs, func(c *results.Cell) float64 { return *c.ServerCPUUSPerCall })
		m.ServerCPUUSPerCall = &v
		m.ServerCPUSource = cs[0].ServerCPUSource
		m.ServerCPUMetricsUSPerCall = mergeOptional(cs, func(c *results.Cell) *float64 { return c.ServerCPUMetricsUSPerCall })
		m.BackendCPUUSPerCall = mergeOptional(cs, func(c *results.Cell) *float64 { return c.BackendCPUUSPerCall })
		m.ProxyCPUUSPerCall = mergeOptional(cs, func(c *results.Cell) *float64 { return c.ProxyCPUUSPerCall })
	}

	m.Repeats = make([]results.Sample, len(cs))
	for i := range cs {
		m.Repeats[i] = cs[i].Sample()
	}
	m.CI = map[results.Figure]results.Interval{}
	for _, fi := range results.Figures() {
		// A figure some repeats lack (server CPU without /metrics, time
		// per batch without a whole batch) gets its interval from the
		// repeats that have it, as the cell's median does.
		if _, ok := m.Figure(fi.Name); !ok {
			continue
		}
		if fi.Name == results.FigBytesTotal {
			// The sum of the sent and received medians, each with its
			// interval: the median of the repeats' sums is another number
			// when they vary (gRPC's control frames do), and an interval
			// whose median is not the figure would contradict it.
			continue
		}
		if vs := m.RepeatValues(fi.Name); len(vs) >= 2 {
			m.CI[fi.Name] = stats.Summarize(vs)
		}
	}
	return m
}

// mergeOptional is the median of an optional figure, nil unless every
// repeat has it.
func mergeOptional(cs []results.Cell, f func(c *results.Cell) *float64) *float64 {
	for i := range cs {
		if f(&cs[i]) == nil {
			return nil
		}
	}
	v := medianOf(cs, func(c *results.Cell) float64 { return *f(c) })
	return &v
}

// mergeDistribution takes the median of each point of the fixed grid.
func mergeDistribution(cs []results.Cell) []results.Quantile {
	n := len(engine.DistributionQuantiles)
	for i := range cs {
		if len(cs[i].Distribution) != n {
			return nil
		}
	}
	out := make([]results.Quantile, n)
	for j := range out {
		out[j] = results.Quantile{
			Q:  cs[0].Distribution[j].Q,
			US: medianOf(cs, func(c *results.Cell) float64 { return c.Distribution[j].US }),
		}
	}
	return out
}

// mergeMix is the repeats' Mix: per scenario, median rates and latency,
// total counts; nil unless every repeat has the same scenarios.
func mergeMix(cs []results.Cell) []results.MixStat {
	first := cs[0].Mix
	if len(first) == 0 {
		return nil
	}
	for i := range cs {
		if len(cs[i].Mix) != len(first) {
			return nil
		}
	}
	out := make([]results.MixStat, len(first))
	for j := range first {
		s := results.MixStat{Scenario: first[j].Scenario, OfferedRate: first[j].OfferedRate}
		s.AchievedRate = medianOf(cs, func(c *results.Cell) float64 { return c.Mix[j].AchievedRate })
		s.LatencyUS = *mergeLatency(cs, func(c *results.Cell) *results.Latency { return &c.Mix[j].LatencyUS })
		for i := range cs {
			s.Calls += cs[i].Mix[j].Calls
			s.Errors += cs[i].Mix[j].Errors
		}
		out[j] = s
	}
	return out
}

// mergeServerMemory is the largest of each memory figure over the repeats;
// nil when none has them.
func mergeServerMemory(cs []results.Cell) *results.ServerMemory {
	var out *results.ServerMemory
	for i := range cs {
		m := cs[i].ServerMemory
		if m == nil {
			continue
		}
		if out == nil {
			out = &results.ServerMemory{}
		}
		out.RSSMiB, out.PeakRSSMiB, out.HeapMiB = max(out.RSSMiB, m.RSSMiB), max(out.PeakRSSMiB, m.PeakRSSMiB), max(out.HeapMiB, m.HeapMiB)
	}
	return out
}
