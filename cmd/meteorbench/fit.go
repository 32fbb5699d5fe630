package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/meteorbench/meteorbench/internal/fit"
	"github.com/meteorbench/meteorbench/internal/flagvalue"
	"github.com/meteorbench/meteorbench/internal/job"
	"github.com/meteorbench/meteorbench/internal/loadgen/lean"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/results"
)

func newFitCmd() *cobra.Command {
	var f runFlags
	var c fit.Flags
	var refuse func() error // fit's own values of run's flags
	cmd := &cobra.Command{
		Use:   "fit",
		Short: "Say whether a traffic mix fits a server tier, per protocol",
		Long: `Say, for each protocol, whether a traffic mix fits a tier (CPUs, memory, a
link): the cores and the bandwidth each way the traffic needs, each resource's
utilisation, the binding one, how many times the traffic can grow before the
tier saturates (a roofline: sum of rate x CPU per call against the cores, sum
of rate x bytes per call against the link, each way), and the smallest of
--tiers that fits.

The costs are measured by running the traffic at its rates (run --mix) in the
tier's condition: the own server pinned to the tier's CPUs (a tier with more
than the machine can pin apart from the load generator is measured on what it
has and scaled), the tier's link emulated. CPU per call depends on load (a
busy server amortises its wake-ups), so a short ramp then measures the traffic
scaled to 0.8x the saturation predicted so far, until a load of at least 0.6x
of it was measured (at most 3 probes), and server CPU is modelled as a fixed
cost plus a cost per call, fitted over those loads; the answer names the range
and says when its prediction extrapolates beyond it. A cost taken while the
load generator was short of CPU gives no verdict. The load generator is the lean engine
unless --engine says otherwise (with --same-host: the standard engine, whose CPU per call is what
your own Go clients pay). Or --from an earlier run's
document: a mix cell of the traffic, or one cell per scenario (one load: CPU
taken as proportional to the rate, and said so).

--verify runs the traffic scaled to the predicted saturation and to 0.8x and
1.2x of it, and reports the measured saturation; when it differs, by how much
and why (what the saturating probe cost against the model); more than 20% off,
the verdict says so instead of claiming a fit.`,
		Example: `  meteorbench fit --tier 1cpu/100mbit --traffic small=800,large=20,post=5
  meteorbench fit --tier 1cpu/2gb/100mbit --traffic small=800,large=20 --tiers 1cpu/100mbit,2cpu/200mbit,4cpu/1gbit
  meteorbench fit --tier 1cpu --traffic post=50 --verify
  meteorbench fit --tier 1cpu --traffic post=10 --verify
  meteorbench fit --tier 1cpu/100mbit --traffic large=20 --from results/run1.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if args = f.Profile.TakeArg(cmd.Flags(), args); len(args) > 0 {
				return usageError{fmt.Errorf("fit takes no arguments, got %q", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := refuse(); err != nil {
				return err
			}
			fl := cmd.Flags()
			o, err := fit.ParseOptions(c)
			if err != nil {
				return usageError{err}
			}
			var from *results.Result // --from: the costs are the document's
			if c.From != "" {
				if from, err = fit.FromDocument(cmd.Context(), c.From, o.Plan); err != nil {
					return usageError{err}
				}
				if !c.Verify {
					jo, err := f.Output(cmd.OutOrStdout(), cmd.ErrOrStderr())
					if err != nil {
						return usageError{err}
					}
					return jobError(job.Fit(cmd.Context(), plan.Config{}, o, from, jo))
				}
			}
			if f.ServerCPUs, err = o.ServerCPUs(f.ServerCPUs, fl.Changed("server-cpus"), !f.Target.T.IsZero()); err != nil {
				return err
			}
			f.Mix = c.Traffic
			if c.SameHost && !fl.Changed("engine") {
				f.Engines = []string{lean.Standard} // the callers' CPU is what your own Go clients pay
			}
			cfg, jo, err := f.config(cmd)
			if err == nil {
				err = o.OneCondition(cfg, fl.Changed("concurrency"))
			}
			if err != nil {
				return usageError{err}
			}
			cfg.GOGC = tuneGeneratorGC()
			return jobError(job.Fit(cmd.Context(), cfg, o, from, jo))
		},
	}
	f.addFlags(cmd.Flags())
	fl := cmd.Flags()
	refuse = takeOver(fl, "fit's to set (the traffic is --traffic, the link the tier's)",
		"scenario", "rate", "iterations", "batch", "link", "segment", "start-at", "cpuprofile")
	// fit measures the server's costs, so by default the generator is the
	// lean engine, as capacity's: on the loaded 2-core VM the standard
	// engine could not send 127 REST posts/s (58 went out, the server 35%
	// busy), far below the 1-CPU tier's saturation it had to reach.
	// --same-host adds the callers' CPU per call, which is your Go
	// clients' (the standard engine's) unless --engine says otherwise.
	flagvalue.SetDefaults(fl, "proto=rest,grpc", "repeat=3", "duration=2s", "warmup=500ms", "engine=lean")
	fl.Lookup("concurrency").Usage = "workers of the measurement and of every probe; auto: 200 ms of the traffic's calls in flight, 16 to 1024"
	fl.Lookup("concurrency").DefValue = "auto"
	fl.StringVar(&c.Tier, "tier", "", "the tier: CPUs[/MEMORY][/BANDWIDTH[/RTT]], e.g. 1cpu/100mbit, 1cpu/2gb/100mbit (bandwidth each way; gb and mb are 2^30 and 2^20 bytes)")
	fl.StringVar(&c.Traffic, "traffic", "", "the traffic mix, SCENARIO=CALLS/S,... (e.g. small=800,large=20,post=5; with --from a run of --endpoints, its pairs' names)")
	fl.StringVar(&c.Headroom, "headroom", "70%", "the utilisation of each resource to stay under")
	fl.StringVar(&c.Tiers, "tiers", "", "tiers to choose from (comma-separated): name the smallest each protocol fits in")
	fl.StringVar(&c.From, "from", "", "take the costs from this run document (a mix cell of the traffic, or one cell per scenario) instead of measuring")
	fl.BoolVar(&c.SameHost, "same-host", false, "the callers share the tier: add the client's CPU per call to the server's")
	fl.BoolVar(&c.Verify, "verify", false, "run the traffic at 0.8x, 1x and 1.2x the predicted saturation and report the measured one")
	return cmd
}
