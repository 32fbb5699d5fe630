// Package session measures a target: Open checks it once (health,
// contract probe, /metrics or its process), then Run measures a plan's
// cells in order and Measure one cell by its key. Per cell it opens the
// client (plan's engine registry) over counted connections (wire), runs
// the warm-up and the measured phase (package engine), reads the server's
// counters around it, and has package summary make the results.Cell of
// it; repeats are merged into one cell with medians (summary.Repeats).
//
//	Spec ──measureCell──▶ engine.Run ──▶ engine.Result ──summary.Cell──▶ results.Cell ──summary.Repeats──▶ Result.Cells
package session

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/clock"
	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/summary"
	"github.com/meteorbench/meteorbench/internal/results"
)

// ErrInterrupted is returned (with the partial result) when ctx is
// cancelled during a run.
var ErrInterrupted = errors.New("interrupted")

// HealthTimeout bounds the health checks: before the run (an unreachable
// target fails fast) and after a cell with errors (a target that went
// away ends the run).
const HealthTimeout = 3 * time.Second

// StartLate is how late after Config.StartAt the first cell may start
// before the run warns that its instances did not start together.
const StartLate = 100 * time.Millisecond

// Session is what every measurement of one target shares, found once: its
// health, its contract (one probe call per scenario and protocol), whether
// it serves meteorbench's /metrics, and how late the open-loop wait wakes
// on this machine. run measures its plan through one; capacity measures
// every probe through one, which used to redo all of it per probe (about
// 260 ms between two probes, most of it the 200 ms scheduling
// calibration).
//
// A Session carries a run's state from cell to cell too: Run measures
// through a copy of it with the run's Config (with), Measure through it.
type Session struct {
	cfg    plan.Config
	health *http.Client
	// sides are where each protocol's server CPU is read, by protocol: its
	// address's /metrics, or its process (targets.go, procstat.go; for
	// endpoints, endpoints.go). A protocol without one has no server CPU.
	sides    map[api.Protocol]cpuSampler
	warnings []string // the target's notes, kept in every result
	// notServed are the plan's scenarios and protocols the target did not
	// answer correctly when probed: left out of every plan (probe.go).
	notServed  []results.NotServed
	scheduling *results.Scheduling
	// prof profiles the cells' windows (profile.go); nil without
	// Config.Profile.
	prof *profiler
}

// newSession is a session of cfg, not yet opened.
func newSession(cfg plan.Config) *Session {
	s := &Session{
		cfg:    cfg,
		health: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
	}
	s.controlOverTLS() // tls.go
	return s
}

// with is the session measuring with cfg (a run's own plan and
// conditions, the same target): what the session found is shared.
func (s *Session) with(cfg plan.Config) *Session {
	c := *s
	c.cfg = cfg
	return &c
}

// Open checks the target of cfg and returns the session to measure it
// through. A target that does not answer its health check, or answers
// none of the contract's calls correctly (unless cfg.NoProbe), fails here.
// Close it after use.
func Open(ctx context.Context, cfg plan.Config) (*Session, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := newSession(cfg)
	warn := func(msg string) {
		s.warnings = append(s.warnings, msg)
		cfg.Logger.Warn(msg)
	}
	if cfg.Endpoints == nil { // a user's endpoint need not serve /healthz, or HTTP/1.1 at all
		notes, err := s.awaitTargets(ctx) // scrape.go
		if err != nil {
			s.Close()
			if ctx.Err() != nil {
				return nil, ErrInterrupted
			}
			return nil, err
		}
		for _, n := range notes {
			warn(n)
		}
	}
	if cfg.Profile { // before any call: a --server-pprof that does not answer stops the run here
		if err := s.openProfiler(ctx, warn); err != nil { // profile.go
			s.Close()
			return nil, err
		}
	}
	if !cfg.NoProbe {
		not, err := s.probeContract(ctx) // probe.go
		if err != nil {
			s.Close()
			return nil, err
		}
		s.notServed = not
		for _, n := range not {
			addr := cfg.Target.For(n.Protocol)
			if addr == "" {
				addr = cfg.Target.String() // the per-protocol form, which gives it none
			}
			cfg.Logger.Warn(fmt.Sprintf("target %s does not serve %s %s: not measured (%s)", addr, n.Scenario, n.Protocol, n.Why))
		}
	}
	if cfg.Endpoints != nil {
		s.openSides(ctx, warn) // endpoints.go
	} else if err := s.openSamplers(ctx, warn); err != nil { // targets.go
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close releases the session's connections.
func (s *Session) Close() {
	s.closeSamplers()
	s.closeProfiler()
}

// Run measures every cell of the plan and returns the result document: a
// session opened for it, then closed.
//
// Stop reasons: completed; interrupted (ctx cancelled: the cells
// measured so far are returned, with ErrInterrupted); failed (the
// target went away or refused the calls: the partial result is returned
// with an error). A target that does not answer its health check, or none
// of the contract's calls, fails before anything is measured, with a nil
// result.
func Run(ctx context.Context, cfg plan.Config) (*results.Result, error) {
	s, err := Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Run(ctx, cfg)
}

// Run measures every cell of cfg's plan through the session. cfg must name
// the session's target (its plan, rate and conditions are its own).
func (s *Session) Run(ctx context.Context, cfg plan.Config) (*results.Result, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Target != s.cfg.Target {
		return nil, fmt.Errorf("a session of %s cannot measure %s", s.cfg.Target, cfg.Target)
	}
	r := s.with(cfg)
	res := &results.Result{
		Schema:    results.Schema,
		Env:       cfg.Env(),
		Settings:  cfg.Settings(),
		Started:   time.Now().UTC().Round(0), // wall clock only: the document round-trips exactly
		Cells:     []results.Cell{},
		Warnings:  slices.Clone(s.warnings),
		NotServed: slices.Clone(s.notServed),
	}
	warn := func(msg string) {
		res.Warnings = append(res.Warnings, msg)
		cfg.Logger.Warn(msg)
	}
	if cfg.Rate > 0 {
		if s.scheduling == nil {
			s.scheduling = scheduling(ctx)
		}
		res.Env.Scheduling = s.scheduling
	}
	if cfg.Started != nil {
		head := *res
		cfg.Started(&head)
	}

	if !cfg.StartAt.IsZero() {
		// Every instance of a segmented run waits for the same moment,
		// then records how late it really started.
		if !engine.WaitUntil(ctx, cfg.StartAt) {
			return nil, ErrInterrupted
		}
		off := time.Since(cfg.StartAt)
		us := float64(off.Nanoseconds()) / 1e3
		res.Env.StartOffsetUS = &us
		if off > StartLate {
			warn(fmt.Sprintf("started %v after --start-at %s (the checks before the first cell took longer): the instances did not start together", off.Round(time.Millisecond), cfg.StartAt.Format(time.RFC3339Nano)))
		}
	}

	specs := served(cfg.Specs(), s.notServed) // probe.go
	var (
		done   []summary.Measured // the measurements of the current group
		runErr error
	)
	// flush merges the current group's measurements into the result and
	// hands them to cfg.Measured.
	flush := func() {
		if len(done) == 0 {
			return
		}
		cells := summary.Repeats(done)
		r.breakdowns(done, cells, warn) // profile.go
		res.Cells = append(res.Cells, cells...)
		done = done[:0]
		if cfg.Measured != nil {
			cfg.Measured(slices.Clone(cells))
		}
	}
	measuredN := 0
	logged := warned{}
	for i, spec := range specs {
		if len(done) > 0 && group(done[0].Spec) != group(spec) {
			flush()
		}
		if cfg.Progress != nil {
			cfg.Progress(plan.Progress{Done: i, Total: len(specs), Cell: spec.String()})
		}
		m, err := r.measureCell(ctx, spec, cfg.Bounds())
		if m != nil {
			measuredN++
			done = append(done, *m)
			for _, w := range m.Cell.Warnings {
				if logged.first(spec.CellKey, w) {
					cfg.Logger.Warn(spec.String() + ": " + w)
				}
			}
			for _, why := range m.Cell.Suspect {
				cfg.Logger.Warn(spec.String() + ": suspect: " + why)
			}
		}
		if ctx.Err() != nil {
			runErr = ErrInterrupted
			break
		}
		if err != nil {
			runErr = err
			break
		}
		if err := r.afterCell(ctx, spec, m); err != nil {
			runErr = err
			break
		}
	}
	flush()
	if cfg.Progress != nil {
		cfg.Progress(plan.Progress{Done: measuredN, Total: len(specs)})
	}

	res.ProfilingCost = r.prof.cost(cfg.Repeat) // profile.go
	res.Finished = time.Now().UTC().Round(0)
	switch {
	case runErr == nil:
		res.Stop = results.Stop{Reason: results.StopCompleted}
	case errors.Is(runErr, ErrInterrupted):
		res.Stop = results.Stop{Reason: results.StopInterrupted}
		res.Interrupted = true
	default:
		res.Stop = results.Failed(runErr)
	}
	return res, runErr
}

// Measure measures the cell k once within b through the session: the
// cell of a plan (Config.Cells) with any of its condition's values set
// (a capacity probe sets the rate and the workers; a fit probe the
// traffic), over the session's target with its shared settings. It
// returns the cell, and an error when the cell could not be measured
// (ErrInterrupted with the partial cell, if any) or the target went away
// during it (with the cell).
func (s *Session) Measure(ctx context.Context, k results.CellKey, b plan.Bounds) (*results.Cell, error) {
	if !s.Serves(k) {
		return nil, fmt.Errorf("%s %s: not served by %s", k.Scenario, k.Protocol, s.cfg.Target.For(k.Protocol))
	}
	if err := validKey(k); err != nil {
		return nil, err
	}
	r, spec := s, plan.Spec{CellKey: k}
	m, err := r.measureCell(ctx, spec, b)
	if m == nil {
		if err == nil {
			err = ErrInterrupted // in the warm-up
		}
		return nil, err
	}
	logged := warned{}
	for _, w := range m.Cell.Warnings {
		if logged.first(spec.CellKey, w) {
			r.cfg.Logger.Warn(spec.String() + ": " + w)
		}
	}
	for _, why := range m.Cell.Suspect {
		r.cfg.Logger.Warn(spec.String() + ": suspect: " + why)
	}
	cells := summary.Repeats([]summary.Measured{*m})
	r.breakdowns([]summary.Measured{*m}, cells, func(msg string) { r.cfg.Logger.Warn(msg) }) // profile.go
	c := &cells[0]
	switch {
	case ctx.Err() != nil:
		return c, ErrInterrupted
	case err != nil:
		return c, err
	}
	return c, r.afterCell(ctx, spec, m)
}

// validKey refuses the values of a key that no plan makes (the others a
// cell's measurement checks as it reads them).
func validKey(k results.CellKey) error {
	switch r := k.RateRequested; {
	case k.Concurrency < 1:
		return fmt.Errorf("%s: concurrency %d: must be at least 1", k.Key(), k.Concurrency)
	case k.Batch < 1:
		return fmt.Errorf("%s: batch %d: must be at least 1", k.Key(), k.Batch)
	case r < 0 || math.IsNaN(r) || math.IsInf(r, 0):
		return fmt.Errorf("%s: rate %v: must be a positive number of calls/s (or 0 for closed-loop)", k.Key(), r)
	}
	return nil
}

// warned remembers the warnings logged per cell, by their shape (digits
// aside), so that a cell's five windows do not say the same thing five
// times on stderr; the document keeps every window's.
type warned map[string]bool

func (w warned) first(k results.CellKey, msg string) bool {
	shape := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return '#'
		}
		return r
	}, msg)
	key := k.Key() + "\x00" + shape
	if w[key] {
		return false
	}
	w[key] = true
	return true
}

// group is what the cells of one group share: their key without the protocol.
func group(s plan.Spec) results.CellKey {
	k := s.CellKey
	k.Protocol = ""
	return k
}

// scheduling measures how precisely the open-loop wait starts calls on this
// machine, with no load yet.
func scheduling(ctx context.Context) *results.Scheduling {
	late := engine.MeasureScheduling(ctx, engine.SchedulingSamples)
	if len(late) == 0 {
		return nil
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	return &results.Scheduling{
		Method:        clock.Method + "; the call is then handed to a free worker, which runs at once (the dispatcher yields to it)",
		Samples:       len(late),
		LatenessP50US: us(engine.Quantile(late, 0.50)),
		LatenessP99US: us(engine.Quantile(late, 0.99)),
	}
}

// afterCell ends the run when a cell suggests going on is pointless: the
// target no longer answers its health check, or it refused every call for
// lack of (the right) credentials.
func (r *Session) afterCell(ctx context.Context, spec plan.Spec, m *summary.Measured) error {
	if m == nil {
		return nil
	}
	c := &m.Cell
	if (c.Errors == 0 && c.Calls > 0) || r.cfg.Endpoints != nil {
		return nil // a user's endpoint has no /healthz to ask
	}
	if _, err := r.checkTargets(ctx, []api.Protocol{spec.Protocol}); err != nil {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		return fmt.Errorf("went away during %s: %w", spec, err)
	}
	if c.Calls == 0 && c.Errors > 0 {
		for class := range c.ErrorClasses {
			if !class.Auth() {
				return nil
			}
		}
		return fmt.Errorf("target %s refused every call of %s (%s): check --token", r.cfg.Target.For(spec.Protocol), spec, c.ErrorClasses)
	}
	return nil
}
