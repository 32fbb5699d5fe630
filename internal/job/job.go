// Package job runs what `meteorbench run` and `capacity` do once their
// flags are a config: start the own server when there is no target,
// measure (session.Run, or a capacity search), analyse, and write the
// document where the output plan says, even a partial one, with progress
// and the summary on stderr (console). It also holds the rules of the
// options the commands share (Endpoints, ClientTLS) and the work of check
// and health. The commands only parse flags:
//
//	flags ─cmd─▶ plan.Config / capacity.Plan ─job─▶ own server ─▶ cells ─▶
//	results.Result ─analysis.Apply─▶ verdicts ─report (output.Plan)─▶ stdout or files
package job

import (
	"context"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"

	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/output"
	"github.com/meteorbench/meteorbench/internal/ownserver"
	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Options are how a job reports, whatever it measures.
type Options struct {
	// Output is where the document goes (report.OutputPlan); its Stdout
	// is the command's standard output. Its fallback file is named after
	// the run's start.
	Output *output.Plan
	// Stderr receives progress, notes, warnings and the summary; Quiet
	// silences all of them.
	Stderr io.Writer
	Quiet  bool
	// CPUProfile, when set, is a file for the load generator's CPU
	// profile (for tuning the harness).
	CPUProfile string
}

// InterruptedError is a job stopped by its context (Ctrl-C): whatever was
// measured has been written, and the command exits with status 130. It
// matches session.ErrInterrupted.
type InterruptedError struct{ Msg string }

func (e *InterruptedError) Error() string        { return e.Msg }
func (e *InterruptedError) Is(target error) bool { return target == session.ErrInterrupted }

// startOwnServer starts the own server for cfg when it has one, pointing
// cfg at it; stop ends it (a no-op without one).
func startOwnServer(ctx context.Context, ui *console, cfg *plan.Config) (stop func(), err error) {
	if !cfg.OwnServer {
		return func() {}, nil
	}
	srv, err := ownserver.Start(ctx, cfg, ui.note)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &InterruptedError{"interrupted"}
		}
		return nil, err
	}
	stopProxies, err := startProxies(ctx, ui, cfg) // proxy.go
	if err != nil {
		srv.Stop(ui.note)
		if ctx.Err() != nil {
			return nil, &InterruptedError{"interrupted"}
		}
		return nil, err
	}
	return func() { stopProxies(); srv.Stop(ui.note) }, nil
}

// write renders the result where o.Output says; the live table, when
// there is one, is out already but for its end. A cancelled job still
// writes what it measured.
func write(ui *console, o Options, live *report.Live, res *results.Result) error {
	p := o.Output
	p.Wrote = func(file output.File, _ int) { ui.note("wrote %s", file.Path) }
	p.Fallback.Name = "meteorbench-" + res.Started.Format("20060102-150405") + ".json"
	render := report.Renderer(context.Background(), res)
	return p.Write(context.Background(), func(w io.Writer, format string) error {
		if live != nil && format == "table" {
			l := live
			live = nil
			return l.Finish(res)
		}
		return render(w, format)
	})
}

// toStdoutTable reports whether the plan prints a table on stdout.
func toStdoutTable(p *output.Plan) bool {
	return p.Prefix == "" && slices.Contains(p.Formats, "table")
}

// cpuProfile starts the CPU profile o asks for; stop ends it.
func cpuProfile(o Options) (stop func(), err error) {
	if o.CPUProfile == "" {
		return func() {}, nil
	}
	pf, err := os.Create(o.CPUProfile)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); pf.Close() }, nil
}

// discard is a logger for warnings that a job sums up itself.
var discard = slog.New(slog.DiscardHandler)
