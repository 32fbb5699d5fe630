package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/output"
	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Run is `meteorbench run`: it starts the own server if cfg has one, runs
// the load generator with progress on o.Stderr, analyses the result and
// writes it where o.Output says, even a partial one. The table to stdout
// is printed as the run goes: each section as soon as its cells are
// measured, the summary at the end.
//
// The error is an InterruptedError when ctx stopped the run, and names
// the cells that cannot be trusted (results.Result.Unusable) when every
// cell was measured but some are not usable: the document is written
// either way.
func Run(ctx context.Context, cfg plan.Config, o Options) error {
	ui := newConsole(o.Stderr, o.Quiet)
	stdout := o.Output.Stdout
	// Warnings are in the table; on the terminal that shows it, once is enough.
	ui.muteWarnings = toStdoutTable(o.Output) && output.IsTerminal(stdout)
	cfg.Logger = slog.New(ui)
	stop, err := startOwnServer(ctx, ui, &cfg)
	if err != nil {
		return err
	}
	defer stop()
	cfg.Progress = ui.progress
	var live *report.Live
	if o.Output.Prefix == "" && o.Output.Formats[0] == "table" {
		out := ui.stdout(stdout)
		cfg.Started = func(h *results.Result) { live = report.NewLive(out, h); out.flush() }
		cfg.Measured = func(cells []results.Cell) {
			if live != nil {
				live.Group(cells)
				out.flush()
			}
		}
		defer func() {
			if live != nil {
				out.flush()
			}
		}()
	}
	stopProfile, err := cpuProfile(o)
	if err != nil {
		return err
	}
	defer stopProfile()

	res, err := session.Run(ctx, cfg)
	ui.done()
	if res == nil {
		if errors.Is(err, session.ErrInterrupted) {
			return &InterruptedError{"interrupted before any cell was measured"}
		}
		return err
	}
	analysis.Apply(res)
	// The summary ends the run on stderr, unless the live table just
	// ended with it on the same terminal.
	if live == nil || !output.IsTerminal(stdout) {
		defer ui.summary(res)
	}
	if werr := write(ui, o, live, res); werr != nil {
		return errors.Join(err, werr)
	}
	switch {
	case errors.Is(err, session.ErrInterrupted):
		return &InterruptedError{fmt.Sprintf("interrupted: partial results (%d cells) written", len(res.Cells))}
	case err != nil:
		return fmt.Errorf("%w (partial results, %d cells, written)", err, len(res.Cells))
	}
	if bad := res.Unusable(); len(bad) > 0 {
		return fmt.Errorf("%d cell(s) cannot be trusted (results written): %s", len(bad), strings.Join(bad, "; "))
	}
	return nil
}
