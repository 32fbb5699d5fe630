// Command meteorbench measures what moving a JSON/REST service to gRPC buys:
// `serve` answers both protocols on one port, `run` loads it and reports the
// two side by side.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/meteorbench/meteorbench/internal/buildinfo"
)

func main() {
	// Only main turns signals into cancellation; commands see a context.
	ctx, stop := signalContext(context.Background())
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	os.Exit(exitCode(err, context.Cause(ctx)))
}

// stopSignals are the signals that stop every command: Ctrl-C, and what
// `timeout`, `docker stop` and Kubernetes send.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// signalled is the cause of a context cancelled by a signal.
type signalled struct{ sig syscall.Signal }

func (s signalled) Error() string { return "interrupted (" + signalName(s.sig) + ")" }

// status is the conventional exit status of a process ended by the signal:
// 128 + its number, 130 for SIGINT, 143 for SIGTERM.
func (s signalled) status() int { return 128 + int(s.sig) }

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// signalContext is cancelled by the first stop signal, with a signalled
// cause: every command stops its work and exits (run and capacity write
// what they measured first, serve drains its calls). A second signal ends
// the process at once, with the same status.
func signalContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, stopSignals...)
	go func() {
		first := <-ch
		s, _ := first.(syscall.Signal)
		cancel(signalled{s})
		<-ch
		fmt.Fprintln(os.Stderr, "meteorbench: second signal: exiting now")
		os.Exit(signalled{s}.status())
	}()
	return ctx, func() { signal.Stop(ch); cancel(nil) }
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "meteorbench",
		Short:         "Measure REST (JSON over HTTP/1.1) against gRPC on one port, side by side",
		Version:       buildinfo.Version(),
		SilenceUsage:  true, // a bad flag gets one line, not the whole usage
		SilenceErrors: true, // main prints the error once, in exitCode
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return usageError{err}
	})
	root.AddCommand(
		// Each subcommand lives in its own file.
		newServeCmd(),
		newHealthCmd(),
		newCheckCmd(),
		newRunCmd(),
		newReportCmd(),
		newCompareCmd(),
		newCapacityCmd(),
		newFitCmd(),
		newMergeCmd(),
		newSchemaCmd(), // payload.go
		newLinkCmd(),
	)
	return root
}

// usageError is a bad flag or argument: exit status 2, as flag parsing does.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// exitError carries an exit status chosen by a command (for instance 130
// for an interrupted run) together with the error to print, if any.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitCode prints err as one line on stderr and maps it to an exit status.
// A command stopped by a signal (cause) exits with that signal's status
// (130 for SIGINT, 143 for SIGTERM) whatever error it returned; one that
// finished cleanly anyway (serve's drain) exits 0.
func exitCode(err, cause error) int {
	if err == nil {
		return 0
	}
	code := 1
	var ee *exitError
	var ue usageError
	switch {
	case errors.As(err, &ee):
		code = ee.code
		err = ee.err
	case errors.As(err, &ue):
		code = 2
	}
	var sig signalled
	if errors.As(cause, &sig) {
		code = sig.status()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "meteorbench:", err)
	}
	return code
}
