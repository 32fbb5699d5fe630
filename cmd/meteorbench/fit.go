package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/meteorbench/meteorbench/internal/cpuset"
	"github.com/meteorbench/meteorbench/internal/fit"
	"github.com/meteorbench/meteorbench/internal/flagvalue"
	"github.com/meteorbench/meteorbench/internal/job"
	"github.com/meteorbench/meteorbench/internal/loadgen"
	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/results"
)

// fitFlags are fit's own flags; the condition flags are run's.
type fitFlags struct {
	tier, tiers, traffic, headroom, from string
	sameHost, verify                     bool
}

// fitRunOnly are run's flags fit sets itself: the traffic is the mix, the
// link the tier's.
var fitRunOnly = []string{"scenario", "rate", "iterations", "batch", "link", "segment", "start-at", "cpuprofile"}

func newFitCmd() *cobra.Command {
	var f runFlags
	var c fitFlags
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
has and scaled), the tier's link emulated. Or --from an earlier run's
document: a mix cell of the traffic, or one cell per scenario.

--verify runs the traffic scaled to the predicted saturation and to 0.8x and
1.2x of it, and reports the measured saturation; more than 20% off, the
verdict says so instead of claiming a fit.`,
		Example: `  meteorbench fit --tier 1cpu/100mbit --traffic small=800,large=20,post=5
  meteorbench fit --tier 1cpu/2gb/100mbit --traffic small=800,large=20 --tiers 1cpu/100mbit,2cpu/200mbit,4cpu/1gbit
  meteorbench fit --tier 1cpu --traffic post=50 --verify
  meteorbench fit --tier 1cpu/100mbit --traffic large=20 --from results/run1.json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("fit takes no arguments, got %q", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, name := range fitRunOnly {
				if cmd.Flags().Changed(name) {
					return usageError{fmt.Errorf("--%s is fit's to set (the traffic is --traffic, the link the tier's)", name)}
				}
			}
			o, err := c.options()
			if err != nil {
				return usageError{err}
			}
			var from *results.Result // --from: the costs are the document's
			if c.from != "" {
				if from, err = fit.FromDocument(cmd.Context(), c.from, o.Plan); err != nil {
					return usageError{err}
				}
				if !c.verify {
					if f.plan, err = report.RunOutput(cmd.OutOrStdout(), f.formats, f.out, f.report); err != nil {
						return usageError{err}
					}
					return jobError(job.Fit(cmd.Context(), loadgen.Config{}, o, from, f.options(cmd)))
				}
			}
			avail, err := cpuset.Available()
			if err != nil && !cmd.Flags().Changed("server-cpus") {
				return fmt.Errorf("--tier: %w", err)
			}
			if !cmd.Flags().Changed("server-cpus") && f.target.Addr == "" {
				var note string
				f.serverCPUs, note = fit.PinnedCPUs(o.Plan.Tier, avail.Len())
				if note != "" {
					o.Notes = append(o.Notes, note)
				}
				o.MeasuredCPUs = float64(f.serverCPUs)
			}
			f.mix = c.traffic
			cfg, err := f.config(cmd)
			if err != nil {
				return usageError{err}
			}
			if len(cfg.Compress) > 1 || len(cfg.JSONCodecs) > 1 || len(cfg.TLS) > 1 || len(cfg.Records) > 1 {
				return usageError{errors.New("fit answers for one condition: give one value of --compress, --json-codec, --tls and --records")}
			}
			if cmd.Flags().Changed("concurrency") {
				if len(cfg.Concurrency) != 1 {
					return usageError{errors.New("--concurrency: give one worker count (or none: it follows the traffic)")}
				}
				o.Workers = cfg.Concurrency[0]
			}
			cfg.GOGC = tuneGeneratorGC()
			return jobError(job.Fit(cmd.Context(), cfg, o, from, f.options(cmd)))
		},
	}
	f.addFlags(cmd.Flags())
	fl := cmd.Flags()
	for _, name := range fitRunOnly {
		fl.MarkHidden(name)
	}
	flagvalue.SetDefault(fl, "proto", "rest,grpc")
	flagvalue.SetDefault(fl, "repeat", "3")
	flagvalue.SetDefault(fl, "duration", "2s")
	flagvalue.SetDefault(fl, "warmup", "500ms")
	fl.Lookup("concurrency").Usage = "workers of the measurement and of every probe; auto: 200 ms of the traffic's calls in flight, 16 to 1024"
	fl.Lookup("concurrency").DefValue = "auto"
	fl.StringVar(&c.tier, "tier", "", "the tier: CPUs[/MEMORY][/BANDWIDTH[/RTT]], e.g. 1cpu/100mbit, 1cpu/2gb/100mbit (bandwidth each way; gb and mb are 2^30 and 2^20 bytes)")
	fl.StringVar(&c.traffic, "traffic", "", "the traffic mix, SCENARIO=CALLS/S,... (e.g. small=800,large=20,post=5)")
	fl.StringVar(&c.headroom, "headroom", "70%", "the utilisation of each resource to stay under")
	fl.StringVar(&c.tiers, "tiers", "", "tiers to choose from (comma-separated): name the smallest each protocol fits in")
	fl.StringVar(&c.from, "from", "", "take the costs from this run document (a mix cell of the traffic, or one cell per scenario) instead of measuring")
	fl.BoolVar(&c.sameHost, "same-host", false, "the callers share the tier: add the client's CPU per call to the server's")
	fl.BoolVar(&c.verify, "verify", false, "run the traffic at 0.8x, 1x and 1.2x the predicted saturation and report the measured one")
	return cmd
}

// options checks fit's own flags and builds the question.
func (c *fitFlags) options() (fit.Options, error) {
	var o fit.Options
	if c.tier == "" || c.traffic == "" {
		return o, errors.New("give --tier and --traffic (e.g. --tier 1cpu/100mbit --traffic small=800,large=20)")
	}
	t, err := fit.ParseTier(c.tier)
	if err != nil {
		return o, fmt.Errorf("--tier: %w", err)
	}
	m, err := results.ParseMix(c.traffic)
	if err != nil {
		return o, fmt.Errorf("--traffic: %w", err)
	}
	h, err := flagvalue.ParsePercent("--headroom", c.headroom, 1, 100)
	if err != nil {
		return o, err
	}
	o.Plan = fit.Plan{Tier: t, Traffic: m, Headroom: h, SameHost: c.sameHost}
	if c.tiers != "" {
		if o.Plan.Tiers, err = fit.ParseTiers(c.tiers); err != nil {
			return o, fmt.Errorf("--tiers: %w", err)
		}
	}
	o.Verify = c.verify
	return o, nil
}
