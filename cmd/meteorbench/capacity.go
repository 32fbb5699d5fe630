package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/meteorbench/meteorbench/internal/capacity"
	"github.com/meteorbench/meteorbench/internal/flagvalue"
	"github.com/meteorbench/meteorbench/internal/job"
)

func newCapacityCmd() *cobra.Command {
	var f runFlags
	var c capacity.Options  // capacity's own flags; the condition flags are run's
	var refuse func() error // run's flags capacity sets itself
	f.Capacity = true
	cmd := &cobra.Command{
		Use:   "capacity",
		Short: "Find the highest rate each protocol sustains under a latency objective",
		Long: `Find, for each scenario x protocol x condition, the highest offered open-loop
rate at which the objective's latency percentile stays within its bound,
errors within the budget, and the achieved rate at least 99% of the offered.

The search grows the rate exponentially from --start, then bisects to
--precision, with fixed-length probes (--probe, each after its own
--probe-warmup and an idle --pause), REST and gRPC probes interleaved step
by step; it confirms the found rate and repeats probes at the boundary. A
probe the load generator itself could not deliver (it woke late, its CPU
was saturated, or every worker was busy while the server met the
objective) is void, and the search reports "generator-bound at N calls/s"
instead of a server capacity. A probe during which the target stalled
(calls still running at the probe's end, calls timed out, a suspect cell)
is void too and repeated at the same rate; stalled three times in a row,
the series fails and the command exits 1. --max-time bounds the whole
search; stopped by it, each series reports its best bracket so far, marked.

--repeat K runs the whole search K times (default 1), every series in each
repetition, and reports per series the median found rate and the range
over the K searches, each search kept in the document.

Every condition flag of run applies (--target, --proto, --scenario,
--server-cpus, --link, --records, ...). Without --concurrency the number of
workers follows the rate (twice the calls in flight at the bound).`,
		Example: `  meteorbench capacity --slo p99=50ms
  meteorbench capacity --scenario small,large --server-cpus 1 --slo p99=50ms
  meteorbench capacity --scenario post --server-cpus 1 --repeat 3
  meteorbench capacity --scenario large --link 100mbit/20ms --format json --out results/cap`,
		Args: func(cmd *cobra.Command, args []string) error {
			args = f.TLS.Mode.TakeArg(cmd.Flags(), args)
			if args = f.Profile.TakeArg(cmd.Flags(), args); len(args) > 0 {
				return usageError{fmt.Errorf("capacity takes no arguments, got %q", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := refuse(); err != nil {
				return err
			}
			cfg, o, err := f.config(cmd)
			if err != nil {
				return usageError{err}
			}
			cfg.GOGC = tuneGeneratorGC()
			c.WorkersGiven = cmd.Flags().Changed("concurrency")
			plan, err := c.Plan(cfg)
			if err != nil {
				return usageError{err}
			}
			return jobError(job.Capacity(cmd.Context(), plan, o))
		},
	}
	f.addFlags(cmd.Flags())
	fl := cmd.Flags()
	refuse = takeOver(fl, "set per probe by capacity (see --probe, --probe-warmup, --start)",
		"rate", "max-workers", "batch", "iterations", "duration", "warmup", "report", "cpuprofile")
	// A capacity search compares two protocols on one scenario by default.
	flagvalue.SetDefaults(fl, "scenario=small", "proto=rest,grpc",
		"repeat=1",    // run's five windows per cell are not capacity's searches
		"engine=lean") // a probe measures the server, not the generator
	fl.Lookup("repeat").Usage = "run the whole search K times, interleaved per repetition; report each series' median found rate and range"
	fl.StringVar(&c.SLO, "slo", "p99=50ms", "the objective: a latency percentile (p50, p90, p99, p99.9) and its bound, from each call's intended start")
	fl.StringVar(&c.MaxErrors, "max-errors", "0.1%", "the error budget, a percentage of attempts")
	fl.StringVar(&c.Precision, "precision", "5%", "stop bisecting when the bracket is this narrow")
	fl.DurationVar(&c.MaxTime, "max-time", 0, "bound the whole search, every repetition (default: per protocol, scenario, condition and repetition, the time of 20 probes and 6 confirmation probes, each with its warm-up and pause: 1m31s with the default probe times)")
	fl.DurationVar(&c.Probe, "probe", 2*time.Second, "measured time of each probe")
	fl.DurationVar(&c.ConfirmProbe, "confirm-probe", 5*time.Second, "measured time of the confirmation and boundary probes at the found rate, so the rate holds over a run that long")
	fl.DurationVar(&c.ProbeWarmup, "probe-warmup", 500*time.Millisecond, "unmeasured time before each probe, at its rate")
	fl.DurationVar(&c.Pause, "pause", 300*time.Millisecond, "idle time between probes")
	fl.Float64Var(&c.Start, "start", 100, "first offered rate, calls/s")
	return cmd
}
