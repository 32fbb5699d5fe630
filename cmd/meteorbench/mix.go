package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/meteorbench/meteorbench/internal/loadgen"
	"github.com/meteorbench/meteorbench/internal/results"
)

// mixUsage is run --mix's help.
const mixUsage = "mixed traffic, open loop: SCENARIO=CALLS/S,... (e.g. small=800,large=20,post=5), every scenario at its own rate at once over each protocol's shared connections; one cell per protocol with each scenario's achieved rate and latency (replaces --scenario and --rate)"

// applyMix reads run --mix into cfg: the mix's scenarios and total rate,
// and, unless --concurrency is given, loadgen.MixWorkers workers.
func (f *runFlags) applyMix(cmd *cobra.Command, cfg *loadgen.Config) error {
	if f.mix == "" {
		return nil
	}
	fl := cmd.Flags()
	switch {
	case fl.Changed("scenario"):
		return errors.New("--mix names the scenarios: drop --scenario")
	case fl.Changed("rate"):
		return errors.New("--mix gives each scenario its rate: drop --rate")
	case fl.Changed("iterations"):
		return errors.New("--mix is bounded by --duration, not --iterations")
	}
	m, err := results.ParseMix(f.mix)
	if err != nil {
		return fmt.Errorf("--mix: %w", err)
	}
	cfg.Mix, cfg.Scenarios, cfg.Rate = m, nil, 0
	if !fl.Changed("concurrency") {
		cfg.Concurrency = []int{loadgen.MixWorkers(m)}
	}
	return nil
}
