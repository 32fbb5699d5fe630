package job

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/fit"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Fit is `meteorbench fit`. With from (the answer from a --from document)
// and no verification it writes that document. Otherwise it starts the
// own server if cfg has one (pinned to the tier's CPUs by the command),
// measures the traffic in the tier's condition, or takes from's costs,
// verifies when fo asks, and writes the document where o.Output says,
// ending stderr with the verdict. Interrupted, the partial answer is
// written and the error is an InterruptedError.
func Fit(ctx context.Context, cfg plan.Config, fo fit.Options, from *results.Result, o Options) error {
	ui := newConsole(o.Stderr, o.Quiet)
	if from != nil && !fo.Verify {
		return write(ui, o, nil, from)
	}
	cfg.Logger = slog.New(ui)
	stop, err := startOwnServer(ctx, ui, &cfg)
	if err != nil {
		return err
	}
	defer stop()
	fo.OnProbe = func(f *results.Fit, pr results.FitProbe) {
		sat := ""
		if pr.Saturated {
			sat = " (saturated)"
		}
		ui.note("verify %s at %sx the traffic: %s of %s calls/s%s", f.Protocol, format.Rate(pr.Scale),
			format.Rate(pr.Achieved), format.Rate(pr.Offered), sat)
	}
	fo.OnRamp = func(pr api.Protocol, scale float64, l fit.Load) {
		busy := ""
		if l.ServerUtilisation != nil {
			busy = ", server " + format.Percent(*l.ServerUtilisation) + " busy"
		}
		ui.note("ramp %s at %sx the traffic: %s calls/s, %s cores%s", pr, format.Rate(scale), format.Rate(l.Rate), format.Number(l.ServerCores), busy)
	}
	started := time.Now()
	s, err := session.Open(ctx, fo.Plan.Config(cfg, fo.Plan.Traffic, fo.Workers))
	if err != nil {
		return err
	}
	defer s.Close()
	res := from
	if from != nil { // the costs are the document's, the probes measured here
		err = fit.VerifyAll(ctx, s, cfg, fo, res)
	} else {
		ui.note("fit: measuring %s on tier %s", fo.Plan.Traffic, fo.Plan.Tier.Name)
		cfg.Progress = ui.progress
		res, err = fit.Measure(ctx, s, cfg, fo)
	}
	ui.done()
	if res == nil {
		if ctx.Err() != nil {
			return &InterruptedError{"interrupted before the traffic was measured"}
		}
		return err
	}
	analysis.Apply(res)
	ui.note("fit took %v", time.Since(started).Round(time.Second))
	if werr := write(ui, o, nil, res); werr != nil {
		return errors.Join(err, werr)
	}
	if res.FitPlan != nil {
		ui.note("%s", res.FitPlan.Verdict)
	}
	if errors.Is(err, session.ErrInterrupted) || ctx.Err() != nil {
		return &InterruptedError{"interrupted: partial fit written"}
	}
	return err
}
