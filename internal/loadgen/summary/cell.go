package summary

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/rusage"
)

const mib = 1 << 20

// serverMemory is the server's memory as a cell records it; nil when its
// /metrics did not say.
func serverMemory(s *ServerSample) *results.ServerMemory {
	if s == nil || s.RSS == 0 && s.Heap == 0 {
		return nil
	}
	return &results.ServerMemory{RSSMiB: s.RSS / mib, PeakRSSMiB: s.PeakRSS / mib, HeapMiB: s.Heap / mib}
}

// ServerCPUMin is the smallest server CPU delta per cell trusted without a
// warning. The counter itself has microsecond resolution, but each scrape
// costs the server some CPU and the runtime does background work (GC,
// timers); below 100 ms those are more than about 1% of the figure.
const ServerCPUMin = 100 * time.Millisecond

// ServerSample is one scrape of the server's /metrics.
type ServerSample struct {
	CPU      time.Duration      // meteorbench_cpu_seconds_total
	Requests map[string]float64 // meteorbench_requests_total by "protocol/method"
	// Procs is the server's GOMAXPROCS (the Go collector's
	// go_sched_gomaxprocs_threads), the CPUs it may use; 0 when absent.
	Procs float64
	// Memory, in bytes (0 when absent): the resident set now and at its
	// peak since the server started, and the Go heap in use now.
	RSS, PeakRSS, Heap float64
	// Source is where CPU came from: SourceMetrics or SourceProc.
	Source string
	// MetricsCPU is the /metrics CPU counter read with a SourceProc
	// sample, when the server serves it; -1 when not.
	MetricsCPU time.Duration
}

// Where a cell's server CPU came from (results.Cell.ServerCPUSource).
const (
	SourceMetrics = "metrics" // the server's /metrics (microseconds)
	SourceProc    = "proc"    // /proc/PID/stat (clock ticks)
)

// ClockTick is the unit of /proc/PID/stat's utime and stime: USER_HZ,
// 100 on every Linux the kernel ABI allows (sysconf(_SC_CLK_TCK)).
const ClockTick = 10 * time.Millisecond

// ProcCPUMin is the smallest server CPU delta per cell trusted without a
// warning when it comes from /proc: each end of the delta may be off by a
// tick, so below a second the figure may be off by more than 2%.
const ProcCPUMin = time.Second

// Scenarios are the scenarios a cell calls, by part: its own, or
// its mix's.
func Scenarios(spec plan.Spec, mix results.Mix) []api.Scenario {
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
	for _, sc := range Scenarios(spec, mix) {
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

// Snapshot is the counters read around a measurement.
type Snapshot struct {
	Wire      wire.Stats
	ClientCPU time.Duration
	Server    *ServerSample // nil when the server's metrics are unknown
	ServerErr error
	// ProxyCPU is the CPU the cell's proxy (its processes) has used, read
	// from /proc, or ProxyErr why not; both zero without a proxy.
	ProxyCPU time.Duration
	ProxyErr error
}

// ReadClient reads the client's own counters: wire bytes and CPU.
func (s *Snapshot) ReadClient(d *wire.Dialer) {
	s.Wire, s.ClientCPU = d.Stats(), rusage.CPU()
}

// Phase is what a cell's measured phase gives its summary: the cell (its
// key and traffic), this instance's share of it, the engine's result, the
// counters read before and after, the connections dialled, the run's
// Config, and what the session knows of the server that answered.
type Phase struct {
	Spec          plan.Spec
	Mix           results.Mix
	Share         engine.Share
	Result        engine.Result
	Before, After Snapshot
	Dials         int64
	Config        plan.Config
	// Target is the address the cell's calls went to.
	Target string
	// ServerRead is true when the server's counters are read (its
	// /metrics or its process): without, its CPU per call is absent.
	ServerRead bool
	// Decoding is how the user's endpoint's answers were decoded (the
	// probe calls settled it); "" for the contract's calls.
	Decoding results.Decoding
	// DecodingWhy is why Decoding is generic ("" when typed).
	DecodingWhy string
}

// Cell turns a measured phase into the cell's figures, warnings and
// self-checks (Check).
func Cell(in Phase) results.Cell {
	spec, mix, sh, ph, before, after, cfg := in.Spec, in.Mix, in.Share, in.Result, in.Before, in.After, in.Config
	open := spec.RateRequested > 0
	t := ph.Tally
	secs := ph.Elapsed.Seconds()
	// Attempts are what was sent; per-call figures (bytes, CPU) are per
	// successful call, as the schema says: failed calls cost something too,
	// but dividing by them would make a dead server look cheap.
	attempts := t.Calls + t.Errors
	c := results.Cell{
		CellKey:     spec.CellKey,
		Target:      in.Target,
		Connections: int(in.Dials),
		Mode:        plan.ModeOf(spec.RateRequested),
		Calls:       t.Calls,
		Errors:      t.Errors,
		DurationS:   secs,
	}
	c.ClientDecoding, c.ClientDecodingWhy = in.Decoding, in.DecodingWhy
	if !open { // open-loop cells have no time per batch
		c.Batches = t.Batch.N
		c.BatchMS = results.Spread{Mean: t.Batch.Mean / 1e6, Stddev: t.Batch.Stddev() / 1e6}
	}
	if len(t.Classes) > 0 {
		c.ErrorClasses = t.Classes
	}
	if len(t.Examples) > 0 {
		c.ErrorExamples = t.Examples
	}
	for k, h := range t.H { // the latency figures of the kinds the tally has
		if h != nil {
			l := engine.Latency(h, t.Sum[k])
			results.LatencyKinds[k].Set(&c, &l)
		}
	}
	c.Distribution = engine.Distribution(t.H[results.KindLatency])
	c.GeneratorDelayUS = generatorDelay(ph.Wake, t.Handoff)
	w := after.Wire.Sub(before.Wire)
	if secs > 0 {
		c.CallsPerS = float64(t.Calls) / secs
		c.MBPerS = float64(w.Sent+w.Received) / 1e6 / secs
	}
	if t.Calls > 0 {
		c.BytesPerCall = results.Bytes{Sent: float64(w.Sent) / float64(t.Calls), Received: float64(w.Received) / float64(t.Calls)}
	}
	clientCPU := after.ClientCPU - before.ClientCPU
	if t.Calls > 0 {
		c.ClientCPUUSPerCall = float64(clientCPU.Microseconds()) / float64(t.Calls)
	}
	if open {
		if secs > 0 {
			c.RateAchieved = float64(attempts) / secs
		}
		c.LateCalls = t.Late
		c.GeneratorLateCalls = t.LateWoken
	}

	warn := func(format string, args ...any) { c.Warnings = append(c.Warnings, fmt.Sprintf(format, args...)) }
	var serverCPU time.Duration = -1
	switch {
	case !in.ServerRead:
	case before.Server == nil || after.Server == nil:
		err := before.ServerErr
		if err == nil {
			err = after.ServerErr
		}
		warn("server CPU unknown: %v", err)
	default:
		serverCPU = after.Server.CPU - before.Server.CPU
		c.ServerCPUSource = after.Server.Source
		if t.Calls > 0 {
			v := float64(serverCPU.Microseconds()) / float64(t.Calls)
			c.ServerCPUUSPerCall = &v
			if m0, m1 := before.Server.MetricsCPU, after.Server.MetricsCPU; c.ServerCPUSource == SourceProc && m0 >= 0 && m1 >= 0 {
				v := float64((m1 - m0).Microseconds()) / float64(t.Calls)
				c.ServerCPUMetricsUSPerCall = &v
			}
		}
		c.ServerMemory = serverMemory(after.Server)
		if procs := after.Server.Procs; procs > 0 && secs > 0 {
			u := serverCPU.Seconds() / secs / procs
			c.ServerUtilisation = &u
		}
		switch {
		case c.ServerCPUSource == SourceProc && serverCPU < ProcCPUMin:
			warn("server CPU %s in the cell (< %v; /proc counts %v clock ticks): server CPU per call is imprecise; measure longer", format.Duration(serverCPU), ProcCPUMin, ClockTick)
		case serverCPU < ServerCPUMin:
			warn("server CPU %s in the cell (< %v): server CPU per call is imprecise; measure longer", format.Duration(serverCPU), ServerCPUMin)
		}
		served, key := servedCount(servedKeys(spec, mix), before.Server, after.Server)
		// Calls cut short by an interruption reached the server too.
		switch sent := attempts + t.Cancelled; {
		case spec.Scenario.Method() == "", spec.Scenario.IsStream():
			// A user's endpoint: not one of the contract's methods the
			// server counts. A stream scenario's call is a message; the
			// server counts its streams.
		case after.Server.Requests == nil:
			// CPU from /proc of a server without meteorbench's metrics:
			// no request counters to check.
		case served > sent && !cfg.Segment.Whole():
			// The other segments load the same server at the same time:
			// expected, and merge accounts for it.
		case served > sent:
			warn("the server counted %d %s calls, this run made %d: another client loaded it, so its CPU figure includes that load", served, key, attempts)
		case served < t.Calls:
			warn("the server counted %d %s calls, fewer than the %d that succeeded here: is the target a meteorbench server?", served, key, t.Calls)
		}
	}

	if spec.Proxy != "" && serverCPU >= 0 {
		serverCPU = addProxy(&c, spec.Proxy, serverCPU, before, after, t.Calls, secs, warn)
	}

	// Was the load generator the bottleneck?
	if secs > 0 {
		su := -1.0
		if serverCPU >= 0 && SharesCores(cfg) {
			su = serverCPU.Seconds() / secs
		}
		if why := GeneratorBottleneck(clientCPU.Seconds()/secs, su); why != "" {
			c.GeneratorBottleneck, c.GeneratorBottleneckReason = true, why
			warn("%s: it may be the bottleneck", why)
		}
		if !open && attempts > 0 {
			// Workers that had a batch to run: with --iterations below the
			// concurrency, the rest idle by design, not for want of speed.
			working := Working(sh.Workers, sh.Iterations)
			if busy := t.Busy.Seconds() / (secs * float64(working)); busy < 0.8 {
				warn("workers were in calls only %s of the time: the load generator could not keep them busy", format.Percent(busy))
			}
		}
	}
	if open {
		if attempts > 0 && float64(t.Late) > 0.01*float64(attempts) {
			warn("%d of %d calls started more than %v after they were due: %s; their latency from the intended start includes that wait", t.Late, attempts, engine.LateThreshold, lateWhy(t.Late, t.LateWoken, ph.Workers, sh.MaxWorkers))
		}
		if ph.Missed > 0 && ph.Stop == "" {
			warn("%s never sent before the cell ended", Plural(int64(ph.Missed), "scheduled call was", "scheduled calls were"))
		}
	}
	if t.Errors > 0 {
		warn("%d of %d calls failed (%s)", t.Errors, attempts, t.Classes)
	}
	if t.Calls == 0 {
		warn("no successful call")
	}
	var mixWarns []string
	c.Mix, mixWarns = mixStats(mix, ph)
	c.Warnings = append(c.Warnings, mixWarns...)
	c.Suspect = Check(&c, spec, Working(sh.Workers, sh.Iterations), ph, cfg.Timeout, cfg.Payload != nil)
	return c
}

// addProxy counts the CPU of the proxy in front of the server (run
// --proxy) in cell c: server CPU per call becomes the server's (backend)
// and the proxy's, both kept apart too. It returns the server CPU of the
// cell with the proxy's: -1, and no server CPU per call, when the proxy's
// is unknown.
func addProxy(c *results.Cell, name string, backend time.Duration, before, after Snapshot, calls int64, secs float64, warn func(string, ...any)) time.Duration {
	if err := cmp.Or(before.ProxyErr, after.ProxyErr); err != nil {
		warn("server CPU unknown: %s's CPU: %v", name, err)
		c.ServerCPUUSPerCall, c.ServerUtilisation = nil, nil
		return -1
	}
	proxy := after.ProxyCPU - before.ProxyCPU
	if proxy < ProcCPUMin {
		warn("%s's CPU %s in the cell (< %v; /proc counts %v clock ticks): its CPU per call is imprecise; measure longer", name, format.Duration(proxy), ProcCPUMin, ClockTick)
	}
	if calls > 0 {
		b, p := float64(backend.Microseconds())/float64(calls), float64(proxy.Microseconds())/float64(calls)
		s := b + p
		c.BackendCPUUSPerCall, c.ProxyCPUUSPerCall, c.ServerCPUUSPerCall = &b, &p, &s
	}
	if u := c.ServerUtilisation; u != nil && backend > 0 {
		// The proxy runs on the server's CPUs: their utilisation.
		v := *u * float64(backend+proxy) / float64(backend)
		c.ServerUtilisation = &v
	}
	return backend + proxy
}

// generatorDelay summarises the generator's own delays; nil without a
// sample.
func generatorDelay(wake, handoff *hdrhistogram.Histogram) *results.GeneratorDelay {
	if wake == nil || wake.TotalCount() == 0 {
		return nil
	}
	g := &results.GeneratorDelay{Wake: engine.Latency(wake, histSum(wake))}
	if handoff != nil && handoff.TotalCount() > 0 {
		l := engine.Latency(handoff, histSum(handoff))
		g.Handoff = &l
	}
	return g
}

// histSum is a histogram's sum, from its buckets: for figures whose mean
// needs no more precision than their percentiles.
func histSum(h *hdrhistogram.Histogram) float64 {
	return h.Mean() * float64(h.TotalCount())
}

// lateWhy says why late calls were late: of late, woken were due when
// the dispatcher itself woke late (the generator's own scheduling or CPU);
// the others waited for a worker, all of the phase's workers busy (grown
// up to maxWorkers when > 0), or for the worker to run.
func lateWhy(late, woken int64, workers, maxWorkers int) string {
	busy := busyWorkers(workers)
	if maxWorkers > 0 {
		busy += ", added as calls came due, at most " + format.Count(int64(maxWorkers))
	}
	waited := fmt.Sprintf("waiting for a worker (a slow server, or %s) or for the worker to run", busy)
	switch woken {
	case 0:
		return waited
	case late:
		return "the load generator woke late for all of them (its own scheduling or CPU)"
	}
	return fmt.Sprintf("%d because the load generator woke late (its own scheduling or CPU), %d %s", woken, late-woken, waited)
}

// busyWorkers says that every worker was busy, in good English.
func busyWorkers(n int) string {
	switch n {
	case 1:
		return "the one worker busy"
	case 2:
		return "both workers busy"
	}
	return fmt.Sprintf("all %d workers busy", n)
}
