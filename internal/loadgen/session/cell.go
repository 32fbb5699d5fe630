package session

import (
	"context"
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/summary"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/rusage"
)

// measureCell opens the protocol's client over counted connections, warms
// up, then measures the cell within b: one repeat's figures. Everything
// that varies by cell comes from spec's key; r.cfg gives what the session
// shares (target, token, timeout, segment, payload, endpoints).
func (r *Session) measureCell(ctx context.Context, spec plan.Spec, b plan.Bounds) (*summary.Measured, error) {
	cfg := r.cfg
	mix, err := mixOf(spec) // mix.go
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	sh := shareOf(cfg, spec, b) // segment.go
	if sh.Empty {
		return r.emptyShare(spec, sh), nil
	}
	dialer := r.dialer(spec) // tls.go
	if spec.Link != "" {
		// A fresh link per cell: no queue or state carries over.
		l, err := link.Parse(spec.Link)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec, err)
		}
		relay, err := link.Listen(l, r.addrOf(spec)) // endpoints.go
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec, err)
		}
		defer relay.Close() // after client.Close below
		dialer.Dial = relay.DialContext
	}
	client, err := r.newClient(spec, r.options(spec, dialer, max(sh.Workers, sh.MaxWorkers)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	defer client.Close()
	callers, err := partCallers(client, spec, mix, sh.Workers, sh.MaxWorkers) // mix.go
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	scheds := schedules(mix, sh)
	grace := min(engine.CellGrace, cfg.Timeout)

	if b.Warmup > 0 {
		engine.Run(ctx, callers, spec.Batch, cfg.Timeout, scheds, engine.Bounds{Soft: b.Warmup, Hard: b.Warmup + grace})
		if ctx.Err() != nil {
			return nil, nil // interrupted before anything was measured
		}
	}

	soft := b.Duration
	if soft == 0 {
		soft = cfg.CellLimit
	}
	// The server's /metrics scrape, an HTTP request that can take a while
	// from a loaded server, stays out of the client's window, which is the
	// phase's (the CPU per call and the generator's share of its cores
	// divide by the phase's time).
	var before, after snapshot
	r.scrapeInto(ctx, spec, &before)
	before.readClient(dialer)
	ph := engine.Run(ctx, callers, spec.Batch, cfg.Timeout, scheds, engine.Bounds{Soft: soft, Hard: soft + grace, Iterations: sh.Iterations})
	after.readClient(dialer)
	r.scrapeInto(ctx, spec, &after)

	m := &summary.Measured{Spec: spec, Cell: r.summarize(spec, mix, sh, ph, before, after, dialer.Stats().Dials), Hists: ph.Tally.Hists()}
	if sh.MaxWorkers > 0 {
		m.Cell.WorkersUsed = len(callers.List)
	}
	m.Cell.TLSHandshakeUS = handshakeLatency(dialer)
	m.Hists[results.KindTLSHandshake], _ = dialer.Handshakes()
	m.Cell.Share = sh.Result(cfg.Segment)
	switch {
	case ctx.Err() != nil:
		m.Cell.StopReason = results.StopInterrupted
		m.Cell.Warnings = append(m.Cell.Warnings, "interrupted: partial measurement")
	case ph.Stop == results.StopTargetDown:
		m.Cell.StopReason = results.StopTargetDown
		m.Cell.Warnings = append(m.Cell.Warnings, fmt.Sprintf("stopped after %s: %v of nothing but transport errors (the target is down?)", format.Seconds(ph.Elapsed.Seconds()), engine.TargetDownAfter))
	}
	return m, nil
}

// shareOf is this instance's share of spec's cell within b, under c's
// segment (engine.ShareOf).
func shareOf(c plan.Config, spec plan.Spec, b plan.Bounds) engine.Share {
	return engine.ShareOf(c.Segment, c.MaxWorkers, spec.CellKey, b.Iterations)
}

// options are the client options of spec's cell for workers workers over
// d: the session's target and credentials, and what each dimension of the
// cell's condition carries to the client (planDimension.option).
func (r *Session) options(spec plan.Spec, d *wire.Dialer, workers int) call.Options {
	o := call.Options{
		Target:      r.addrOf(spec), // endpoints.go
		Token:       r.cfg.Token,
		Workers:     workers,
		Connections: r.cfg.Connections,
		Dialer:      d,
		Payload:     r.cfg.Payload,
	}
	plan.ClientSettings(spec.Condition, &o)
	return o
}

// emptyShare is the cell of an instance whose share of it is nothing: no
// call, no client opened, and a warning that says so (segment.go).
func (r *Session) emptyShare(spec plan.Spec, sh engine.Share) *summary.Measured {
	c := results.Cell{CellKey: spec.CellKey, Mode: plan.ModeOf(spec.RateRequested), Share: sh.Result(r.cfg.Segment)}
	c.Warnings = []string{fmt.Sprintf("segment %s has no share of this cell's %s: not measured here (the other segments measure it)", r.cfg.Segment, sh.Why)}
	return &summary.Measured{Spec: spec, Cell: c}
}

// snapshot is the counters read around a measurement.
type snapshot struct {
	wire      wire.Stats
	clientCPU time.Duration
	server    *ServerSample // nil when the server's metrics are unknown
	serverErr error
}

// readClient reads the client's own counters: wire bytes and CPU.
func (s *snapshot) readClient(d *wire.Dialer) {
	s.wire, s.clientCPU = d.Stats(), rusage.CPU()
}

// scrapeInto reads the server's counters from its /metrics, when the run
// reads them.
func (r *Session) scrapeInto(ctx context.Context, spec plan.Spec, s *snapshot) {
	sc := r.scraperOf(spec) // endpoints.go
	if sc == nil {
		return
	}
	if ss, err := sc.sample(ctx); err != nil {
		s.serverErr = err
	} else {
		s.server = &ss
	}
}

// summarize turns a measurement into a cell's figures and warnings.
func (r *Session) summarize(spec plan.Spec, mix results.Mix, sh engine.Share, ph engine.Result, before, after snapshot, dials int64) results.Cell {
	cfg := r.cfg
	open := spec.RateRequested > 0
	t := ph.Tally
	secs := ph.Elapsed.Seconds()
	// Attempts are what was sent; per-call figures (bytes, CPU) are per
	// successful call, as the schema says: failed calls cost something too,
	// but dividing by them would make a dead server look cheap.
	attempts := t.Calls + t.Errors
	c := results.Cell{
		CellKey:     spec.CellKey,
		Target:      r.cellTarget(spec), // targets.go
		Connections: int(dials),
		Mode:        plan.ModeOf(spec.RateRequested),
		Calls:       t.Calls,
		Errors:      t.Errors,
		DurationS:   secs,
	}
	if cfg.Endpoints != nil {
		c.ClientDecoding = cfg.Endpoints.Decoding(spec.Protocol, spec.Scenario) // settled by the probe calls
	}
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
	w := after.wire.Sub(before.wire)
	if secs > 0 {
		c.CallsPerS = float64(t.Calls) / secs
		c.MBPerS = float64(w.Sent+w.Received) / 1e6 / secs
	}
	if t.Calls > 0 {
		c.BytesPerCall = results.Bytes{Sent: float64(w.Sent) / float64(t.Calls), Received: float64(w.Received) / float64(t.Calls)}
	}
	clientCPU := after.clientCPU - before.clientCPU
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
	case r.scraperOf(spec) == nil:
	case before.server == nil || after.server == nil:
		err := before.serverErr
		if err == nil {
			err = after.serverErr
		}
		warn("server CPU unknown: %v", err)
	default:
		serverCPU = after.server.CPU - before.server.CPU
		c.ServerCPUSource = after.server.Source
		if t.Calls > 0 {
			v := float64(serverCPU.Microseconds()) / float64(t.Calls)
			c.ServerCPUUSPerCall = &v
			if m0, m1 := before.server.MetricsCPU, after.server.MetricsCPU; c.ServerCPUSource == SourceProc && m0 >= 0 && m1 >= 0 {
				v := float64((m1 - m0).Microseconds()) / float64(t.Calls)
				c.ServerCPUMetricsUSPerCall = &v
			}
		}
		c.ServerMemory = serverMemory(after.server) // memory.go
		if procs := after.server.Procs; procs > 0 && secs > 0 {
			u := serverCPU.Seconds() / secs / procs
			c.ServerUtilisation = &u
		}
		switch {
		case c.ServerCPUSource == SourceProc && serverCPU < ProcCPUMin:
			warn("server CPU %s in the cell (< %v; /proc counts %v clock ticks): server CPU per call is imprecise; measure longer", format.Duration(serverCPU), ProcCPUMin, ClockTick)
		case serverCPU < ServerCPUMin:
			warn("server CPU %s in the cell (< %v): server CPU per call is imprecise; measure longer", format.Duration(serverCPU), ServerCPUMin)
		}
		served, key := servedCount(servedKeys(spec, mix), before.server, after.server) // mix.go
		// Calls cut short by an interruption reached the server too.
		switch sent := attempts + t.Cancelled; {
		case spec.Scenario.Method() == "":
			// A user's endpoint: not one of the contract's methods the
			// server counts.
		case after.server.Requests == nil:
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

	// Was the load generator the bottleneck?
	if secs > 0 {
		su := -1.0
		if serverCPU >= 0 && summary.SharesCores(cfg) {
			su = serverCPU.Seconds() / secs
		}
		if why := summary.GeneratorBottleneck(clientCPU.Seconds()/secs, su); why != "" {
			c.GeneratorBottleneck, c.GeneratorBottleneckReason = true, why
			warn("%s: it may be the bottleneck", why)
		}
		if !open && attempts > 0 {
			// Workers that had a batch to run: with --iterations below the
			// concurrency, the rest idle by design, not for want of speed.
			working := summary.Working(sh.Workers, sh.Iterations)
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
			warn("%s never sent before the cell ended", summary.Plural(int64(ph.Missed), "scheduled call was", "scheduled calls were"))
		}
	}
	if t.Errors > 0 {
		warn("%d of %d calls failed (%s)", t.Errors, attempts, t.Classes)
	}
	if t.Calls == 0 {
		warn("no successful call")
	}
	var mixWarns []string
	c.Mix, mixWarns = mixStats(mix, ph) // mix.go
	c.Warnings = append(c.Warnings, mixWarns...)
	c.Suspect = summary.Check(&c, spec, summary.Working(sh.Workers, sh.Iterations), ph, cfg.Timeout, cfg.Payload != nil)
	return c
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
