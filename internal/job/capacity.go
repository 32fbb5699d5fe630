package job

import (
	"context"
	"errors"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"time"

	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/capacity"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Capacity is `meteorbench capacity`: it starts the own server if the
// plan's config has one, runs the search with a line per probe on
// o.Stderr, and writes the document (capacity.Plan.Document) where
// o.Output says, a partial one when interrupted (an InterruptedError).
// A search that failed (capacity.Failed) returns its error after the
// document is written.
func Capacity(ctx context.Context, p *capacity.Plan, o Options) error {
	ui := newConsole(o.Stderr, o.Quiet)
	p.Base.Logger = discard // probe warnings are summed up by the search
	stop, err := startOwnServer(ctx, ui, &p.Base)
	if err != nil {
		return err
	}
	defer stop()
	started := time.Now().UTC().Round(0)
	p.OnProbe = func(k results.CellKey, pr capacity.Probe) {
		why := ""
		if pr.Why != "" {
			why = " (" + pr.Why + ")"
		}
		ui.note("%s %s%s · %s %s calls/s → %s%s", k.Scenario, k.Protocol, features(k.Condition), pr.Phase,
			format.Rate(pr.Outcome.Offered), pr.Verdict, why)
	}
	p.OnSearch = func(i, k int) { ui.note("capacity search %d of %d", i, k) }
	ui.note("capacity search: %s, up to %v", p.Objective, p.MaxTime)
	found, err := p.Run(ctx)
	if errors.Is(err, session.ErrWrongProtocol) || errors.Is(err, session.ErrNoProcess) {
		return err // a --target or --server-pid to fix, found before any probe: no document
	}
	res := p.Document(found, err, errors.Is(err, ctx.Err()) && ctx.Err() != nil, started)
	analysis.Apply(res)
	defer ui.summary(res)
	if werr := write(ui, o, nil, res); werr != nil {
		return errors.Join(err, werr)
	}
	if res.Interrupted {
		return &InterruptedError{"interrupted: partial search written"}
	}
	if err == nil {
		err = capacity.Failed(found)
	}
	return err
}

// features is a condition's features for a progress line: " · link ...".
func features(c results.Condition) string {
	if f := c.Features(); f != "" {
		return " · " + f
	}
	return ""
}
