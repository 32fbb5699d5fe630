package session

import (
	"context"
	"fmt"

	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/summary"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
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
	sh := shareOf(cfg, spec, b) // engine/segment.go
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
		if p := cfg.Packet; p != nil {
			p.Set(l)
			dialer.Dial, dialer.UDP = p.DialContext, p.DialUDP
		}
	}
	if spec.Link != "" && cfg.Packet == nil {
		l, _ := link.Parse(spec.Link)
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
	// With --profile, the server's profile spans both scrapes, the
	// client's the phase (profile.go).
	var before, after summary.Snapshot
	prof := r.startProfiles(ctx, spec, soft+grace)
	r.scrapeInto(ctx, spec, &before)
	r.readProxy(spec, &before)
	before.ReadClient(dialer)
	ph := engine.Run(ctx, callers, spec.Batch, cfg.Timeout, scheds, engine.Bounds{Soft: soft, Hard: soft + grace, Iterations: sh.Iterations})
	after.ReadClient(dialer)
	prof.stopClient()
	r.readProxy(spec, &after)
	r.scrapeInto(ctx, spec, &after)

	m := &summary.Measured{Spec: spec, Cell: summary.Cell(r.phase(spec, mix, sh, ph, before, after, dialer.Stats().Dials)), Hists: ph.Tally.Hists()}
	m.Profile = prof.stopServer(ctx)
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
		Target:  r.addrOf(spec), // endpoints.go
		Token:   r.cfg.Token,
		Workers: workers,
		Dialer:  d,
		Payload: r.cfg.Payload,
	}
	plan.ClientSettings(spec.Condition, &o)
	return o
}

// phase is what summary.Cell needs of a measured phase of spec's cell.
func (r *Session) phase(spec plan.Spec, mix results.Mix, sh engine.Share, ph engine.Result, before, after summary.Snapshot, dials int64) summary.Phase {
	p := summary.Phase{
		Spec: spec, Mix: mix, Share: sh, Result: ph, Before: before, After: after, Dials: dials,
		Config:     r.cfg,
		Target:     r.cellTarget(spec), // targets.go
		ServerRead: r.scraperOf(spec) != nil,
	}
	if r.cfg.Endpoints != nil {
		p.Decoding = r.cfg.Endpoints.Decoding(spec.Protocol, spec.Scenario) // settled by the probe calls
		p.DecodingWhy = r.cfg.Endpoints.DecodingWhy(spec.Protocol, spec.Scenario)
	}
	return p
}

// emptyShare is the cell of an instance whose share of it is nothing: no
// call, no client opened, and a warning that says so (engine/segment.go).
func (r *Session) emptyShare(spec plan.Spec, sh engine.Share) *summary.Measured {
	c := results.Cell{CellKey: spec.CellKey, Mode: plan.ModeOf(spec.RateRequested), Share: sh.Result(r.cfg.Segment)}
	c.Warnings = []string{fmt.Sprintf("segment %s has no share of this cell's %s: not measured here (the other segments measure it)", r.cfg.Segment, sh.Why)}
	return &summary.Measured{Spec: spec, Cell: c}
}

// readProxy reads the CPU of the proxy in front of the server in spec's
// cell (run --proxy): all its processes, from /proc.
func (r *Session) readProxy(spec plan.Spec, s *summary.Snapshot) {
	if spec.Proxy == "" {
		return
	}
	b, ok := r.cfg.Behind[spec.Proxy]
	if !ok {
		s.ProxyErr = fmt.Errorf("%s is not running", spec.Proxy)
		return
	}
	s.ProxyCPU, s.ProxyErr = TreeCPU(b.PID)
}

// scrapeInto reads the server's counters from its /metrics, when the run
// reads them.
func (r *Session) scrapeInto(ctx context.Context, spec plan.Spec, s *summary.Snapshot) {
	sc := r.scraperOf(spec) // endpoints.go
	if sc == nil {
		return
	}
	if ss, err := sc.sample(ctx); err != nil {
		s.ServerErr = err
	} else {
		s.Server = &ss
	}
}
