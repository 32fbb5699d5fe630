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
	// Only main turns signals into cancellation; libraries see a context.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	os.Exit(exitCode(err))
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
		newRunCmd(),
		newReportCmd(),
		newCompareCmd(),
		newCapacityCmd(),
		newMergeCmd(),
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
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "meteorbench:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "meteorbench:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}
