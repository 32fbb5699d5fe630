package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/meteorbench/meteorbench/internal/job"
	"github.com/meteorbench/meteorbench/internal/report"
)

func newCompareCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "compare OLD.json NEW.json",
		Short: "Compare two saved results cell by cell (did my change help?)",
		Long: `Compare two result documents (schema meteorbench/v1), for instance before and
after a server change, or the same run on two machines. Cells are matched by
scenario/protocol/batch/concurrency(/rate); for each, the change in calls/s,
latency percentiles, time per batch, bytes and CPU per call, in percent.

When both runs were made with --repeat, each change is tested over the
per-repeat values (Mann-Whitney U, alpha 0.05, as benchstat does): "~" marks
a change the repeats do not show to be real. With fewer than 4 repeats per
side no change can be significant; 5 or more are better. Without repeats the
deltas are single measurements: significance unknown.

The two runs' verdict summaries come first, old over new; then the
differences in the environment (versions, CPU, GOMAXPROCS, load settings;
not the random port of a server each run started itself); cells measured on
one side only are listed last. A change not tested (a single measurement a
side) is marked and explained once.`,
		Example: `  meteorbench compare before.json after.json
  meteorbench compare laptop.json server.json --format markdown`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageError{fmt.Errorf("compare: want OLD.json and NEW.json, got %d argument(s)", len(args))}
			}
			return nil
		},
		PreRunE: func(*cobra.Command, []string) error {
			for _, f := range report.CompareFormats {
				if f == format {
					return nil
				}
			}
			return usageError{fmt.Errorf("compare: --format %q: want one of %s", format, strings.Join(report.CompareFormats, ", "))}
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return docError(job.Compare(cmd.Context(), args[0], args[1], format, cmd.OutOrStdout()))
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "table", "output `format`: "+strings.Join(report.CompareFormats, ", "))
	return cmd
}
