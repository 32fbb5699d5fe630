package job

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/output"
	"github.com/meteorbench/meteorbench/internal/results"
)

// console is the stderr side of a run: a progress bar on a terminal, one
// progress line per cell elsewhere (a CI log, a file), warnings and notes
// as lines, and the verdicts' summary at the end; none of it with --quiet
// except errors. It is the Logger's handler, so warnings clear the bar
// before they print.
type console struct {
	mu    sync.Mutex
	w     io.Writer
	quiet bool
	tty   bool
	// warnings are not printed when the table they also appear in goes to
	// the same terminal: once is enough.
	muteWarnings bool
	bar          *progressbar.ProgressBar
	stop         chan struct{} // stops the bar's clock
	began        time.Time
	complete     bool // every planned cell was measured: the bar ends at 100%
}

func newConsole(w io.Writer, quiet bool) *console {
	return &console{w: w, quiet: quiet, tty: !quiet && output.IsTerminal(w)}
}

// progress implements plan.Config.Progress.
func (u *console) progress(p plan.Progress) {
	if u.quiet {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.began.IsZero() {
		u.began = time.Now()
	}
	eta := ""
	if p.Done > 0 && p.Done < p.Total {
		left := time.Since(u.began) / time.Duration(p.Done) * time.Duration(p.Total-p.Done)
		eta = " · about " + left.Round(time.Second).String() + " left"
	}
	if !u.tty {
		if p.Cell != "" {
			fmt.Fprintf(u.w, "meteorbench: [%d/%d] %s%s\n", p.Done+1, p.Total, p.Cell, eta)
		}
		return
	}
	if u.bar == nil {
		u.bar = progressbar.NewOptions(p.Total,
			progressbar.OptionSetWriter(u.w),
			progressbar.OptionSetWidth(24),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetRenderBlankState(true),
		)
		u.stop = make(chan struct{})
		go u.tick(u.bar, u.stop)
	}
	desc := p.Cell + eta
	if p.Cell == "" { // the end: Done cells were measured
		u.complete = p.Done >= p.Total
		desc = fmt.Sprintf("%d of %d cells measured", p.Done, p.Total)
	}
	u.bar.Describe(fmt.Sprintf("%-44s", desc))
	u.bar.Set(p.Done)
}

// tick redraws the bar every second, so its clock moves during long cells.
func (u *console) tick(bar *progressbar.ProgressBar, stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			u.mu.Lock()
			bar.Add(0)
			u.mu.Unlock()
		}
	}
}

// done ends the bar: at 100% on its own line when every cell was
// measured (it stayed at the last cell's start, "50% (1/2)", before), else
// (interrupted, failed) removed rather than shown complete.
func (u *console) done() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.bar == nil {
		return
	}
	close(u.stop)
	if u.complete {
		u.bar.Finish()
		fmt.Fprintln(u.w)
	} else {
		u.bar.Clear()
	}
	u.bar = nil
}

// note prints an informational line.
func (u *console) note(format string, args ...any) {
	u.line("meteorbench: " + fmt.Sprintf(format, args...))
}

// summary ends the run with the verdicts and the payload crossovers, the
// lines people read first.
func (u *console) summary(r *results.Result) {
	if len(r.Verdicts) == 0 {
		return
	}
	u.line("meteorbench: summary")
	for _, v := range r.Verdicts {
		u.line("  " + v.Summary)
		for _, n := range v.Notes {
			u.line("    note: " + n)
		}
	}
	for _, l := range analysis.CrossoverLines(r.Crossovers) {
		u.line("  " + l)
	}
}

func (u *console) line(s string) {
	if u.quiet {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.bar != nil {
		u.bar.Clear()
	}
	fmt.Fprintln(u.w, s)
	if u.bar != nil {
		u.bar.RenderBlank()
	}
}

// Enabled implements slog.Handler: warnings and worse.
func (u *console) Enabled(_ context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && !u.muteWarnings
}

// Handle implements slog.Handler: one line per record.
func (u *console) Handle(_ context.Context, r slog.Record) error {
	u.line("meteorbench: warning: " + r.Message)
	return nil
}

// WithAttrs implements slog.Handler (attributes are not printed).
func (u *console) WithAttrs([]slog.Attr) slog.Handler { return u }

// WithGroup implements slog.Handler.
func (u *console) WithGroup(string) slog.Handler { return u }

// stdout returns a buffer for output to w that goes out whole at each
// flush, with the progress bar cleared first (they may share a terminal).
func (u *console) stdout(w io.Writer) *uiWriter { return &uiWriter{u: u, w: w} }

// uiWriter buffers stdout between flushes; see console.stdout.
type uiWriter struct {
	u   *console
	w   io.Writer
	buf bytes.Buffer
}

func (w *uiWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }

func (w *uiWriter) flush() {
	if w.buf.Len() == 0 {
		return
	}
	w.u.mu.Lock()
	defer w.u.mu.Unlock()
	if w.u.bar != nil {
		w.u.bar.Clear()
	}
	w.buf.WriteTo(w.w)
	if w.u.bar != nil {
		w.u.bar.RenderBlank()
	}
}
