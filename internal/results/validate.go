package results

import (
	"fmt"
	"math"
	"sort"
	"strconv"
)

// Plausible maxima of a document's figures. Nothing a run can measure comes
// near them; a value beyond one is corrupt or made up, and refused on read
// before any reporter, chart or sum sees it.
const (
	MaxCount       = 1e15 // calls, errors, batches, late calls: 10^15 calls at 10^6/s is 30 years
	MaxRate        = 1e9  // calls/s, MB/s
	MaxLatencyUS   = 7.2e9
	MaxBatchMS     = 1e12
	MaxBytesOnWire = 1e12 // bytes per call
	MaxSeconds     = 1e8  // durations, offsets (about 3 years)
	MaxWorkers     = 1e7  // concurrency, connections, batch size, records
)

// InvalidError names the first value of a document that is out of bounds:
// its JSON path ("cells[3].latency_us.p99") and what is wrong with it.
type InvalidError struct {
	Path string
	Msg  string
}

func (e *InvalidError) Error() string { return e.Path + ": " + e.Msg }

// Validate checks every count, rate, latency and histogram of r against its
// bounds: finite, not negative, below the plausible maxima above, a
// worker count of at least 1, quantiles within 0..1, histograms of the
// documents' geometry whose count agrees with the cell's calls. The error
// is an *InvalidError for the first bad value, in document order.
func Validate(r *Result) error {
	v := &validator{}
	v.settings(&r.Settings)
	if r.Env.StartOffsetUS != nil {
		v.finite("env.start_offset_us", *r.Env.StartOffsetUS, -MaxSeconds*1e6, MaxSeconds*1e6)
	}
	for i := range r.Verdicts {
		v.verdict(fmt.Sprintf("verdicts[%d]", i), &r.Verdicts[i])
	}
	for i := range r.Cells {
		v.cell(fmt.Sprintf("cells[%d]", i), &r.Cells[i])
	}
	for i := range r.Capacity {
		v.capacity(fmt.Sprintf("capacity[%d]", i), &r.Capacity[i])
	}
	if m := r.Merged; m != nil {
		for i, in := range m.Instances {
			v.count(fmt.Sprintf("merged.instances[%d].calls", i), float64(in.Calls))
		}
	}
	return v.err
}

// validator keeps the first error; every check after it is a no-op.
type validator struct{ err error }

func (v *validator) fail(path, format string, args ...any) {
	if v.err == nil {
		v.err = &InvalidError{Path: path, Msg: fmt.Sprintf(format, args...)}
	}
}

// finite checks lo <= x <= hi, x a number.
func (v *validator) finite(path string, x, lo, hi float64) {
	switch {
	case v.err != nil:
	case math.IsNaN(x) || math.IsInf(x, 0):
		v.fail(path, "%v is not a finite number", x)
	case x < 0 && lo == 0:
		v.fail(path, "%s is negative", num(x))
	case x < lo:
		v.fail(path, "%s is below %s", num(x), num(lo))
	case x > hi:
		v.fail(path, "%s is above the plausible maximum %s", num(x), num(hi))
	}
}

func (v *validator) count(path string, x float64)   { v.finite(path, x, 0, MaxCount) }
func (v *validator) rate(path string, x float64)    { v.finite(path, x, 0, MaxRate) }
func (v *validator) workers(path string, x float64) { v.finite(path, x, 0, MaxWorkers) }

// atLeastOne checks a worker count or batch size: 1 or more.
func (v *validator) atLeastOne(path string, x int) {
	v.workers(path, float64(x))
	if x < 1 {
		v.fail(path, "%d: must be at least 1", x)
	}
}

func num(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func (v *validator) settings(s *Settings) {
	for i, b := range s.Batches {
		v.atLeastOne(fmt.Sprintf("settings.batches[%d]", i), b)
	}
	for i, c := range s.Concurrency {
		v.atLeastOne(fmt.Sprintf("settings.concurrency[%d]", i), c)
	}
	for i, n := range s.Records {
		v.atLeastOne(fmt.Sprintf("settings.records[%d]", i), n)
	}
	v.workers("settings.connections", float64(s.Connections))
	v.finite("settings.duration_s", s.DurationS, 0, MaxSeconds)
	v.count("settings.iterations", float64(s.Iterations))
	v.finite("settings.warmup_s", s.WarmupS, 0, MaxSeconds)
	v.finite("settings.timeout_s", s.TimeoutS, 0, MaxSeconds)
	v.rate("settings.rate", s.Rate)
	v.workers("settings.repeat", float64(s.Repeat))
	if g := s.Segment; g != nil && (g.Count < 0 || g.Index < 0 || g.Index > g.Count || g.Count > MaxWorkers) {
		v.fail("settings.segment", "%d/%d: want 1 <= index <= count", g.Index, g.Count)
	}
}

func (v *validator) condition(path string, c *Condition, workers bool) {
	if workers {
		v.atLeastOne(path+".concurrency", c.Concurrency)
	} else {
		v.workers(path+".concurrency", float64(c.Concurrency)) // capacity: 0 follows the rate
	}
	v.rate(path+".rate_requested", c.RateRequested)
	v.workers(path+".server_cpus", float64(c.ServerCPUs))
	v.workers(path+".records", float64(c.Records))
}

func (v *validator) latency(path string, l *Latency) {
	if l == nil {
		return
	}
	for _, f := range []struct {
		name string
		x    float64
	}{{"p50", l.P50}, {"p90", l.P90}, {"p99", l.P99}, {"p999", l.P999}, {"max", l.Max}, {"mean", l.Mean}} {
		v.finite(path+"."+f.name, f.x, 0, MaxLatencyUS)
	}
}

func (v *validator) cell(path string, c *Cell) {
	v.atLeastOne(path+".batch", c.Batch)
	v.condition(path, &c.Condition, true)
	v.workers(path+".connections", float64(c.Connections))
	v.count(path+".calls", float64(c.Calls))
	v.count(path+".errors", float64(c.Errors))
	for _, k := range sortedKeys(c.ErrorClasses) {
		v.count(path+".error_classes."+string(k), float64(c.ErrorClasses[k]))
	}
	v.finite(path+".duration_s", c.DurationS, 0, MaxSeconds)
	v.rate(path+".calls_per_s", c.CallsPerS)
	v.rate(path+".mb_per_s", c.MBPerS)
	v.rate(path+".rate_achieved", c.RateAchieved)
	v.count(path+".late_calls", float64(c.LateCalls))
	v.count(path+".generator_late_calls", float64(c.GeneratorLateCalls))
	for _, k := range LatencyKinds {
		v.latency(path+"."+k.Field, k.Get(c))
	}
	for i, q := range c.Distribution {
		p := fmt.Sprintf("%s.distribution[%d]", path, i)
		v.finite(p+".q", q.Q, 0, 1)
		v.finite(p+".us", q.US, 0, MaxLatencyUS)
	}
	if g := c.GeneratorDelayUS; g != nil {
		v.latency(path+".generator_delay_us.wake", &g.Wake)
		v.latency(path+".generator_delay_us.handoff", g.Handoff)
	}
	if c.GeneratorBottleneckReason != "" && !c.GeneratorBottleneck {
		v.fail(path+".generator_bottleneck_reason", "%q without generator_bottleneck", c.GeneratorBottleneckReason)
	}
	if u := c.ServerUtilisation; u != nil {
		// A share of the server's CPUs; above 1 only by rounding or a
		// server that used more threads than its GOMAXPROCS.
		v.finite(path+".server_utilisation", *u, 0, 64)
	}
	v.count(path+".batches", float64(c.Batches))
	v.finite(path+".batch_ms.mean", c.BatchMS.Mean, 0, MaxBatchMS)
	v.finite(path+".batch_ms.stddev", c.BatchMS.Stddev, 0, MaxBatchMS)
	v.finite(path+".bytes_per_call.sent", c.BytesPerCall.Sent, 0, MaxBytesOnWire)
	v.finite(path+".bytes_per_call.received", c.BytesPerCall.Received, 0, MaxBytesOnWire)
	v.finite(path+".client_cpu_us_per_call", c.ClientCPUUSPerCall, 0, MaxLatencyUS)
	if c.ServerCPUUSPerCall != nil {
		v.finite(path+".server_cpu_us_per_call", *c.ServerCPUUSPerCall, 0, MaxLatencyUS)
	}
	if c.BackendCPUUSPerCall != nil {
		v.finite(path+".backend_cpu_us_per_call", *c.BackendCPUUSPerCall, 0, MaxLatencyUS)
	}
	if c.ProxyCPUUSPerCall != nil {
		v.finite(path+".proxy_cpu_us_per_call", *c.ProxyCPUUSPerCall, 0, MaxLatencyUS)
	}
	for _, k := range sortedKeys(c.CI) {
		iv := c.CI[k]
		p := path + ".ci." + string(k)
		v.finite(p+".median", iv.Median, -MaxCount, MaxCount)
		v.finite(p+".lo", iv.Lo, -MaxCount, MaxCount)
		v.finite(p+".hi", iv.Hi, -MaxCount, MaxCount)
		v.finite(p+".confidence", iv.Confidence, 0, 1)
		v.count(p+".n", float64(iv.N))
	}
	for i, s := range c.Repeats {
		for _, k := range sortedKeys(s) {
			v.finite(fmt.Sprintf("%s.repeats[%d].%s", path, i, k), s[k], -MaxCount, MaxCount)
		}
	}
	if sh := c.Share; sh != nil {
		v.workers(path+".share.workers", float64(sh.Workers))
		v.rate(path+".share.rate", sh.Rate)
		v.count(path+".share.iterations", float64(sh.Iterations))
	}
	if v.err == nil && c.Histograms != nil {
		v.histograms(path+".histograms", c)
	}
}

// histograms decodes each of a cell's histograms and checks its count
// against the cell's: the latency histograms hold every successful call
// (the load generator records each, clamped to the geometry), the per-call
// breakdowns at most one value per call. The TLS handshake counts
// connections, not calls.
func (v *validator) histograms(path string, c *Cell) {
	for _, f := range LatencyKinds {
		enc := *f.Hist(c.Histograms)
		if enc == "" || v.err != nil {
			continue
		}
		p := path + "." + f.Name
		hist, err := DecodeHistogram(enc)
		if err != nil {
			v.fail(p, "%v", err)
			continue
		}
		n := hist.TotalCount()
		switch {
		case f.Count == CountCalls && n != c.Calls:
			v.fail(p, "holds %d values, the cell %d calls", n, c.Calls)
		case f.Count == CountAtMostCalls && n > c.Calls:
			v.fail(p, "holds %d values, more than the cell's %d calls", n, c.Calls)
		}
	}
}

func (v *validator) verdict(path string, vd *Verdict) {
	v.condition(path+".condition", &vd.Condition, false)
	for i, vs := range vd.Versus {
		for j, r := range vs.Ratios {
			p := fmt.Sprintf("%s.versus[%d].ratios[%d]", path, i, j)
			v.finite(p+".ratio", r.Ratio, 0, MaxCount)
			if r.Lo != nil {
				v.finite(p+".lo", *r.Lo, 0, MaxCount)
			}
			if r.Hi != nil {
				v.finite(p+".hi", *r.Hi, 0, MaxCount)
			}
			if r.P != nil {
				v.finite(p+".p", *r.P, 0, 1)
			}
		}
		if e := vs.EncodingShare; e != nil {
			v.finite(fmt.Sprintf("%s.versus[%d].encoding_share", path, i), *e, -MaxCount, MaxCount)
		}
	}
}

func (v *validator) capacity(path string, c *Capacity) {
	v.condition(path+".condition", &c.Condition, false)
	v.finite(path+".percentile", c.Percentile, 0, 100)
	v.finite(path+".bound_us", c.BoundUS, 0, MaxLatencyUS)
	v.finite(path+".max_errors", c.MaxErrors, 0, 1)
	v.rate(path+".rate_min", c.RateMin)
	v.rate(path+".rate_max", c.RateMax)
	v.search(path, &c.CapacitySearch)
	for i := range c.Searches {
		v.search(fmt.Sprintf("%s.searches[%d]", path, i), &c.Searches[i])
	}
}

// search checks one capacity search: the series' own fields, or one of its
// repeated searches.
func (v *validator) search(path string, c *CapacitySearch) {
	v.rate(path+".rate", c.Rate)
	v.rate(path+".lo", c.Lo)
	v.rate(path+".hi", c.Hi)
	v.rate(path+".generator_bound", c.GeneratorBound)
	v.workers(path+".held", float64(c.Held))
	v.workers(path+".boundary", float64(c.Boundary))
	v.workers(path+".workers", float64(c.Workers))
	for i := range c.Probes {
		pr := &c.Probes[i]
		p := fmt.Sprintf("%s.probes[%d]", path, i)
		v.rate(p+".offered", pr.Offered)
		v.rate(p+".achieved", pr.Achieved)
		v.latency(p+".latency_us", &pr.LatencyUS)
		v.count(p+".calls", float64(pr.Calls))
		v.count(p+".errors", float64(pr.Errors))
		v.finite(p+".duration_s", pr.DurationS, 0, MaxSeconds)
	}
}

// sortedKeys are a map's keys in order, so the first error is the same
// every time.
func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}
