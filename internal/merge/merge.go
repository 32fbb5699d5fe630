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
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Input is one document to merge and the name it is reported by (its file).
type Input struct {
	Name   string
	Result *results.Result
}

// Merge merges the inputs into one document. It refuses inputs that are
// not one plan (other settings), other schemas, the same run given twice,
// the same segment twice, or segments of different counts, naming the
// difference. A missing segment is not an error: the document says which
// (Result.Merged, Result.Warnings).
func Merge(inputs []Input) (*results.Result, error) {
	if len(inputs) < 2 {
		return nil, fmt.Errorf("merge: want at least two documents, got %d", len(inputs))
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
		Schema:     results.Schema,
		Env:        first.Result.Env,
		Settings:   first.Result.Settings,
		Started:    first.Result.Started,
		Finished:   first.Result.Finished,
		StopReason: "completed",
		Cells:      []results.Cell{},
		Merged:     info,
	}
	out.Env.StartOffsetUS = nil
	out.Env.Scheduling = nil // each instance measured its own; see the inputs
	out.Settings.Segment = nil
	warn := func(format string, args ...any) { out.Warnings = append(out.Warnings, fmt.Sprintf(format, args...)) }
	if info.Missing != nil {
		warn("%s: the merged load is less than the plan's", info.Segments)
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
		if r.StopReason != "completed" && out.StopReason == "completed" {
			out.StopReason = r.StopReason + " (" + in.Name + ")"
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

	cells, err := mergeCells(inputs)
	if err != nil {
		return nil, err
	}
	out.Cells = cells
	analysis.Apply(out)
	return out, nil
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

// planDiff names the first setting two documents' plans differ in ("" when
// they are one plan). The segment and the start time are not the plan.
func planDiff(a, b results.Settings) string {
	a.Segment, b.Segment = nil, nil
	a.StartAt, b.StartAt = nil, nil
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	t := va.Type()
	for i := range t.NumField() {
		fa, fb := va.Field(i).Interface(), vb.Field(i).Interface()
		if !reflect.DeepEqual(norm(fa), norm(fb)) {
			name := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
			return fmt.Sprintf("%s %v, not %v", name, show(fb), show(fa))
		}
	}
	return ""
}

// norm makes an empty slice and a nil one equal.
func norm(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice && rv.Len() == 0 {
		return nil
	}
	return v
}

func show(v any) string {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice {
		parts := make([]string, rv.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(rv.Index(i).Interface())
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return fmt.Sprint(v)
}

// sameRun refuses a run given twice (the same file, or a copy of it): the
// same start and end to the nanosecond and the same segment.
func sameRun(inputs []Input) error {
	type id struct {
		started, finished time.Time
		segment           string
	}
	seen := map[id]string{}
	for _, in := range inputs {
		r := in.Result
		seg := "1/1"
		if r.Settings.Segment != nil {
			seg = r.Settings.Segment.String()
		}
		k := id{r.Started.UTC(), r.Finished.UTC(), seg}
		if prev, ok := seen[k]; ok {
			return fmt.Errorf("merge: %s and %s are the same run (started %s, segment %s): give each run once", prev, in.Name, r.Started.Format(time.RFC3339Nano), seg)
		}
		seen[k] = in.Name
	}
	return nil
}

// segments checks the inputs' segments and describes them: all of one
// count, each at most once; or all whole runs.
func segments(inputs []Input) (*results.Merged, error) {
	info := &results.Merged{}
	count := -1
	byIndex := map[int]string{}
	for _, in := range inputs {
		r := in.Result
		inst := results.Instance{
			File: in.Name, Target: r.Env.Target, Started: r.Started, Finished: r.Finished,
			StartOffsetUS: r.Env.StartOffsetUS, StopReason: r.StopReason,
		}
		for i := range r.Cells {
			inst.Calls += r.Cells[i].Calls
		}
		n := 1
		if s := r.Settings.Segment; s != nil && !s.Whole() {
			seg := *s
			inst.Segment = &seg
			n = s.Count
		}
		switch {
		case count == -1:
			count = n
		case n != count && (n == 1 || count == 1):
			return nil, fmt.Errorf("merge: %s is %s, %s is %s: merge segments with segments, whole runs with whole runs",
				in.Name, segName(inst.Segment), inputs[0].Name, segName(inputs[0].Result.Settings.Segment))
		case n != count:
			return nil, fmt.Errorf("merge: %s is segment %s, %s is of %d: the segments overlap; merge the segments of one --segment i/N count", in.Name, inst.Segment, inputs[0].Name, count)
		}
		if inst.Segment != nil {
			if prev, ok := byIndex[inst.Segment.Index]; ok {
				return nil, fmt.Errorf("merge: segment %s given twice (%s, %s)", inst.Segment, prev, in.Name)
			}
			byIndex[inst.Segment.Index] = in.Name
		}
		info.Instances = append(info.Instances, inst)
	}
	if count == 1 {
		info.Segments = fmt.Sprintf("%d whole runs of the plan: their loads added", len(inputs))
		return info, nil
	}
	var have []string
	for i := 1; i <= count; i++ {
		if _, ok := byIndex[i]; ok {
			have = append(have, strconv.Itoa(i))
		} else {
			info.Missing = append(info.Missing, i)
		}
	}
	info.Segments = fmt.Sprintf("segments %s of %d", strings.Join(have, ", "), count)
	if len(info.Missing) > 0 {
		miss := make([]string, len(info.Missing))
		for i, m := range info.Missing {
			miss[i] = strconv.Itoa(m)
		}
		word := "segment"
		if len(miss) > 1 {
			word = "segments"
		}
		info.Segments += fmt.Sprintf(" — %s %s missing", word, strings.Join(miss, ", "))
	}
	return info, nil
}

func segName(s *results.Segment) string {
	if s == nil || s.Whole() {
		return "a whole run"
	}
	return "segment " + s.String()
}

// part is one input's cell.
type part struct {
	in   Input
	idx  int
	cell *results.Cell
}

// mergeCells merges the cells by key, in the order they first appear.
func mergeCells(inputs []Input) ([]results.Cell, error) {
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
	m := results.Cell{CellKey: ps[0].cell.CellKey, Mode: ps[0].cell.Mode}
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
		m.AddCounts(c)
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
	for _, f := range latencyFields {
		var enc string
		var l *results.Latency
		if enc, l, err = mergeHist(measured, f); err != nil {
			return m, fmt.Errorf("%s histogram: %w", f.name, err)
		}
		*f.enc(&hs) = enc
		f.set(&m, l)
		if f.name == "latency" && enc != "" {
			h, _ := results.DecodeHistogram(enc)
			m.Distribution = results.DistributionOf(h)
		}
	}
	if hs != (results.Histograms{}) {
		m.Histograms = &hs
	}
	return m, nil
}

// latencyField is one histogram of a cell and the figure it gives.
type latencyField struct {
	name string
	enc  func(*results.Histograms) *string
	get  func(*results.Cell) *results.Latency
	set  func(*results.Cell, *results.Latency)
}

var latencyFields = []latencyField{
	{"latency", func(h *results.Histograms) *string { return &h.Latency },
		func(c *results.Cell) *results.Latency { return &c.LatencyUS },
		func(c *results.Cell, l *results.Latency) {
			if l != nil {
				c.LatencyUS = *l
			}
		}},
	optionalLatency("uncorrected", func(h *results.Histograms) *string { return &h.Uncorrected }, func(c *results.Cell) **results.Latency { return &c.LatencyUncorrectedUS }),
	optionalLatency("first_record", func(h *results.Histograms) *string { return &h.FirstRecord }, func(c *results.Cell) **results.Latency { return &c.FirstRecordUS }),
	optionalLatency("last_byte", func(h *results.Histograms) *string { return &h.LastByte }, func(c *results.Cell) **results.Latency { return &c.LastByteUS }),
	optionalLatency("decode", func(h *results.Histograms) *string { return &h.Decode }, func(c *results.Cell) **results.Latency { return &c.DecodeUS }),
	optionalLatency("tls_handshake", func(h *results.Histograms) *string { return &h.TLSHandshake }, func(c *results.Cell) **results.Latency { return &c.TLSHandshakeUS }),
}

// optionalLatency is the latencyField of a figure a cell may lack (a
// *Latency field, nil when absent): get and set both go through field.
func optionalLatency(name string, enc func(*results.Histograms) *string, field func(*results.Cell) **results.Latency) latencyField {
	return latencyField{name, enc,
		func(c *results.Cell) *results.Latency { return *field(c) },
		func(c *results.Cell, l *results.Latency) { *field(c) = l }}
}

// ErrNoHistograms is wrapped when a cell with calls keeps no histograms (a
// document from before they were kept): it cannot be merged exactly.
var ErrNoHistograms = errors.New("no histograms (a document from an older meteorbench?): cannot merge its percentiles exactly")

// mergeHist merges one histogram over the parts: the encoded union and the
// figure it gives (mean: the count-weighted mean of the parts' exact
// means); "" and nil when no part has it.
func mergeHist(ps []part, f latencyField) (string, *results.Latency, error) {
	var (
		sum      *hdrhistogram.Histogram
		weighted float64
	)
	for _, p := range ps {
		c := p.cell
		var enc string
		if c.Histograms != nil {
			enc = *f.enc(c.Histograms)
		}
		l := f.get(c)
		if enc == "" {
			if f.name == "latency" && c.Calls > 0 {
				return "", nil, fmt.Errorf("%s: %w", p.in.Name, ErrNoHistograms)
			}
			if l != nil && l.Max > 0 && f.name != "latency" {
				return "", nil, fmt.Errorf("%s: %w", p.in.Name, ErrNoHistograms)
			}
			continue
		}
		h, err := results.DecodeHistogram(enc)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", p.in.Name, err)
		}
		if sum == nil {
			sum = results.NewHistogram()
		}
		if dropped := sum.Merge(h); dropped != 0 {
			return "", nil, fmt.Errorf("%s: %d values dropped merging its histogram", p.in.Name, dropped)
		}
		mean := h.Mean()
		if l != nil {
			mean = l.Mean * 1e3
		}
		weighted += mean * float64(h.TotalCount())
	}
	if sum == nil || sum.TotalCount() == 0 {
		return "", nil, nil
	}
	l := results.LatencyOf(sum, weighted/float64(sum.TotalCount()))
	enc, err := results.EncodeHistogram(sum)
	if err != nil {
		return "", nil, err
	}
	return enc, &l, nil
}
