// Package merge puts the result documents of several load generators that
// ran one plan together back into one document (`meteorbench merge`): the
// segments of a `run --segment i/N`, or whole runs of the same plan from
// several machines, whose loads then add up.
//
// What is exact and what is summed:
//   - Latency figures (percentiles, maximum, the distribution) come from the
//     union of the inputs' HdrHistograms (results.Histograms, one geometry,
//     merged without loss): they are those of all the calls together, as if
//     one load generator had made them. Means are the call-weighted means of
//     the inputs' exact means.
//   - Counts are summed: calls, errors and their classes, batches, late
//     calls, connections. So are the rates of instances that ran at the same
//     time: calls/s, MB/s, the achieved open-loop rate.
//   - Per-call costs are totals over total calls: bytes and client CPU
//     (each instance's own). Server CPU: each instance read the one
//     server's counter over its own window, which holds every instance's
//     calls, so per target the largest of those totals is taken (summed
//     over different targets), divided by all the calls.
//   - A cell's duration is the longest of the instances'. Time per batch
//     is the pooled mean and standard deviation of the instances' batches.
//   - Repeats (--repeat K) are pooled: a merged cell's figures are over all
//     repeats of all instances, without per-repeat confidence intervals.
//
// Verdicts are recomputed (analysis.Apply) from the merged cells.
package merge

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Input is one document to merge and the name it is reported by (its file).
type Input struct {
	Name   string
	Result *results.Result
}

// Merge merges the inputs into one document: two or more, or the segments
// of one run --segment i/N (one segment alone is the merged document of
// a run whose other segments are missing). It refuses inputs that are
// not one plan (other settings), other schemas, the same run given twice,
// the same segment twice, or segments of different counts, naming the
// difference. A missing segment is not an error: the document says which
// (Result.Merged, Result.Warnings). Every input is checked first
// (results.Validate: no negative count or worker count, no value out of
// bounds); counts are summed with overflow checks, and the merged document
// is checked too, so a failure names the inputs rather than surfacing later
// as a value JSON cannot encode. Cancelling ctx stops it between cells.
func Merge(ctx context.Context, inputs []Input) (*results.Result, error) {
	switch {
	case len(inputs) == 0:
		return nil, fmt.Errorf("merge: no documents")
	case len(inputs) == 1 && (inputs[0].Result == nil || inputs[0].Result.Settings.Segment == nil || inputs[0].Result.Settings.Segment.Whole()):
		return nil, fmt.Errorf("merge: want at least two documents, or segments of a run --segment i/N; got one (%s)", inputs[0].Name)
	}
	for _, in := range inputs {
		r := in.Result
		switch {
		case r == nil:
			return nil, fmt.Errorf("merge: %s: no document", in.Name)
		case r.Schema != results.Schema:
			return nil, fmt.Errorf("merge: %s: schema %q, want %q", in.Name, r.Schema, results.Schema)
		case len(r.Capacity) > 0:
			return nil, fmt.Errorf("merge: %s is a capacity search, not a run: only run documents merge", in.Name)
		case r.Merged != nil:
			return nil, fmt.Errorf("merge: %s is already a merged document: merge the original inputs together", in.Name)
		}
		if err := results.Validate(r); err != nil {
			return nil, fmt.Errorf("merge: %s: %w", in.Name, err)
		}
	}
	first := inputs[0]
	for _, in := range inputs[1:] {
		if d := planDiff(first.Result.Settings, in.Result.Settings); d != "" {
			return nil, fmt.Errorf("merge: %s is another plan than %s: %s", in.Name, first.Name, d)
		}
	}
	if err := sameRun(inputs); err != nil {
		return nil, err
	}
	info, err := segments(inputs)
	if err != nil {
		return nil, err
	}

	out := &results.Result{
		Schema:   results.Schema,
		Env:      first.Result.Env,
		Settings: first.Result.Settings,
		Started:  first.Result.Started,
		Finished: first.Result.Finished,
		Stop:     results.Stop{Reason: results.StopCompleted},
		Cells:    []results.Cell{},
		Merged:   info,
	}
	out.Env.StartOffsetUS = nil
	out.Env.Scheduling = nil // each instance measured its own; see the inputs
	out.Settings.Segment = nil
	warn := func(format string, args ...any) { out.Warnings = append(out.Warnings, fmt.Sprintf(format, args...)) }
	if info.Missing != nil {
		n := len(inputs) + len(info.Missing)
		warn("%s: the merged figures cover %d of the %d segments, a load less than the plan's", info.Segments, len(inputs), n)
	}
	if out.Settings.Repeat > 1 {
		warn("the inputs measured every cell %d times: the merged figures pool every repeat of every instance, without per-repeat confidence intervals", out.Settings.Repeat)
		out.Settings.Repeat = 1
	}
	targets := map[string]bool{}
	for i, in := range inputs {
		r := in.Result
		if r.Started.Before(out.Started) {
			out.Started = r.Started
		}
		if r.Finished.After(out.Finished) {
			out.Finished = r.Finished
		}
		if r.Stop.Reason != results.StopCompleted && out.Stop.Reason == results.StopCompleted {
			out.Stop = r.Stop
			out.Stop.Input = in.Name
		}
		out.Interrupted = out.Interrupted || r.Interrupted
		targets[r.Env.Target] = true
		for _, w := range r.Warnings {
			warn("%s: %s", label(in, i), w)
		}
		for _, f := range envFields {
			if a, b := f.get(&first.Result.Env), f.get(&r.Env); a != b {
				warn("%s has %s %q, %s %q: the instances were not alike", in.Name, f.name, b, first.Name, a)
			}
		}
	}
	if len(targets) > 1 {
		out.Env.Target = strings.Join(slices.Sorted(maps.Keys(targets)), ",")
		warn("the instances loaded different targets (%s): their loads are added, not one server's", out.Env.Target)
	}
	out.Env.Flags = slices.Clone(first.Result.Env.Flags)

	cells, err := mergeCells(ctx, inputs)
	if err != nil {
		return nil, err
	}
	out.Cells = cells
	analysis.Apply(out)
	if err := results.Validate(out); err != nil {
		return nil, fmt.Errorf("merge: the merged document of %s is out of bounds: %w", names(inputs), err)
	}
	return out, nil
}

// names lists the inputs' names: "a.json, b.json".
func names(inputs []Input) string {
	var ns []string
	for _, in := range inputs {
		ns = append(ns, in.Name)
	}
	return strings.Join(ns, ", ")
}

// label names an input in warnings: its segment, else its name.
func label(in Input, _ int) string {
	if s := in.Result.Settings.Segment; s != nil && !s.Whole() {
		return "segment " + s.String() + " (" + in.Name + ")"
	}
	return in.Name
}

// envFields are the parts of Env that should agree; a difference is
// reported, not refused (a newer build on one machine still measured).
var envFields = []struct {
	name string
	get  func(*results.Env) string
}{
	{"meteorbench version", func(e *results.Env) string { return e.MeteorbenchVersion }},
	{"Go version", func(e *results.Env) string { return e.GoVersion }},
	{"GOEXPERIMENT", func(e *results.Env) string { return e.GoExperiment }},
	{"grpc version", func(e *results.Env) string { return e.GRPCVersion }},
}

// part is one input's cell.
type part struct {
	in   Input
	idx  int
	cell *results.Cell
}

// mergeCells merges the cells by key, in the order they first appear.
func mergeCells(ctx context.Context, inputs []Input) ([]results.Cell, error) {
	var order []string
	parts := map[string][]part{}
	for i, in := range inputs {
		seen := map[string]bool{}
		for j := range in.Result.Cells {
			c := &in.Result.Cells[j]
			k := c.Key()
			if seen[k] {
				return nil, fmt.Errorf("merge: %s has cell %s twice", in.Name, k)
			}
			seen[k] = true
			if _, ok := parts[k]; !ok {
				order = append(order, k)
			}
			parts[k] = append(parts[k], part{in, i, c})
		}
	}
	out := make([]results.Cell, 0, len(order))
	for _, k := range order {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		c, err := mergeCell(parts[k], len(inputs))
		if err != nil {
			return nil, fmt.Errorf("merge: cell %s: %w", k, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// mergeCell merges one cell's parts (see the package comment).
func mergeCell(ps []part, inputs int) (results.Cell, error) {
	m := results.Cell{CellKey: ps[0].cell.CellKey, Mode: ps[0].cell.Mode, ClientDecoding: ps[0].cell.ClientDecoding, ClientDecodingWhy: ps[0].cell.ClientDecodingWhy}
	warn := func(format string, args ...any) { m.Warnings = append(m.Warnings, fmt.Sprintf(format, args...)) }
	if len(ps) < inputs {
		var names []string
		for _, p := range ps {
			names = append(names, p.in.Name)
		}
		warn("measured by %d of the %d inputs only (%s)", len(ps), inputs, strings.Join(names, ", "))
	}
	var (
		measured  []part // the parts that measured something
		bytesSent float64
		bytesRecv float64
		clientCPU float64
		serverCPU = map[string]float64{} // per target: the largest total
		serverOK  = true
		batches   results.Welford
	)
	for _, p := range ps {
		c := p.cell
		for _, w := range c.Warnings {
			warn("%s: %s", label(p.in, p.idx), w)
		}
		if c.Share != nil && c.Share.Empty {
			continue
		}
		measured = append(measured, p)
		if err := m.AddCountsChecked(c); err != nil {
			return m, fmt.Errorf("adding %s: %w", p.in.Name, err)
		}
		m.Connections += c.Connections
		m.CallsPerS += c.CallsPerS
		m.MBPerS += c.MBPerS
		m.RateAchieved += c.RateAchieved
		m.DurationS = math.Max(m.DurationS, c.DurationS)
		n := float64(c.Calls)
		bytesSent += c.BytesPerCall.Sent * n
		bytesRecv += c.BytesPerCall.Received * n
		clientCPU += c.ClientCPUUSPerCall * n
		if c.Calls > 0 {
			if c.ServerCPUUSPerCall == nil {
				serverOK = false
			} else {
				t := p.in.Result.Env.Target
				serverCPU[t] = math.Max(serverCPU[t], *c.ServerCPUUSPerCall*n)
			}
		}
		if c.Batches > 0 && c.BatchMS.Mean > 0 {
			batches.Merge(results.WelfordOf(c.Batches, c.BatchMS))
		}
	}
	if len(measured) == 0 {
		warn("no input measured this cell")
		return m, nil
	}
	if m.Calls > 0 {
		n := float64(m.Calls)
		m.BytesPerCall = results.Bytes{Sent: bytesSent / n, Received: bytesRecv / n}
		m.ClientCPUUSPerCall = clientCPU / n
		if serverOK {
			var total float64
			for _, v := range serverCPU {
				total += v
			}
			v := total / n
			m.ServerCPUUSPerCall = &v
		}
	}
	if batches.N > 0 {
		m.BatchMS = results.Spread{Mean: batches.Mean, Stddev: batches.Stddev()}
	}

	// The latency figures, from the union of the histograms.
	var hs results.Histograms
	var err error
	for kind, f := range results.LatencyKinds {
		var enc string
		var l *results.Latency
		if enc, l, err = mergeHist(measured, results.LatencyKind(kind)); err != nil {
			return m, fmt.Errorf("%s histogram: %w", f.Name, err)
		}
		*f.Hist(&hs) = enc
		if l != nil || kind != int(results.KindLatency) {
			f.Set(&m, l)
		}
		if results.LatencyKind(kind) == results.KindLatency && enc != "" {
			h, _ := results.DecodeHistogram(enc)
			m.Distribution = results.DistributionOf(h)
		}
	}
	if hs != (results.Histograms{}) {
		m.Histograms = &hs
	}
	return m, nil
}
