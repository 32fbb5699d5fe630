package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/meteorbench/meteorbench/internal/job"
	"github.com/meteorbench/meteorbench/internal/report"
)

func newMergeCmd() *cobra.Command {
	var (
		formats []string
		out     string
		quiet   bool
	)
	cmd := &cobra.Command{
		Use:   "merge A.json B.json [...] | merge - < DOCS.jsonl",
		Short: "Merge the results of several load generators that ran one plan together",
		Long: `Merge result documents of one plan measured by several load generators at the
same time: the segments of 'run --segment i/N' (usually with a shared
--start-at), or whole runs of the same plan from several machines, whose loads
then add up. The result is one document, as if one load generator had made
every call: report and compare read it like any other.

Exact: the latency percentiles, maximum and distribution come from the union of
the cells' HdrHistograms. Summed: calls, errors, bytes, batches, connections,
and the rates of the instances (calls/s, MB/s). Per-call costs are totals over
all calls. Verdicts are recomputed. A missing segment is reported, not refused;
other plans, other schemas, the same run twice, a segment twice or segments of
different counts are refused.

An input is a file of one document (--format json), or of JSON Lines, one
document per line (--format jsonl), each read and checked alike; "-" reads
standard input. So the outputs of several generators can arrive in one
stream, such as their logs gathered from an orchestrator (deploy/swarm). The
inputs hold two documents or more, or the segments of one --segment count:
one segment alone is its own merged document with the others named missing.`,
		Example: `  meteorbench merge seg1.json seg2.json seg3.json --out merged
  meteorbench merge seg*.json --format table
  cat gen-*.jsonl | meteorbench merge - --format table,json --out merged`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usageError{fmt.Errorf("merge: want RESULT.json files, or - for documents on stdin")}
			}
			return nil
		},
		PreRunE: func(_ *cobra.Command, args []string) error {
			if err := report.CheckFormats(formats); err != nil {
				return usageError{fmt.Errorf("merge: %w", err)}
			}
			return sameFiles(args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			plan := report.OutputPlan(cmd.OutOrStdout(), formats, out, "meteorbench-merged.json")
			if err := plan.Check("--out"); err != nil {
				return usageError{fmt.Errorf("merge: %w", err)}
			}
			return docError(job.Merge(ctx, args, cmd.InOrStdin(), plan, cmd.ErrOrStderr(), quiet))
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&formats, "format", []string{"json"}, "output formats: "+strings.Join(report.Formats, ", "))
	fl.StringVar(&out, "out", "", "write one file per format to PREFIX.<ext> instead of stdout (a PREFIX ending in a format's extension loses it)")
	fl.BoolVarP(&quiet, "quiet", "q", false, "no summary of the inputs on stderr")
	return cmd
}

// sameFiles refuses a file given twice, under any name, and stdin ("-")
// given twice.
func sameFiles(paths []string) error {
	infos := make([]os.FileInfo, len(paths))
	stdin := false
	for i, p := range paths {
		if p == job.Stdin {
			if stdin {
				return usageError{fmt.Errorf("merge: - (stdin) given twice: give each input once")}
			}
			stdin = true
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return usageError{fmt.Errorf("merge: %w", err)}
		}
		for j := range i {
			if os.SameFile(infos[j], fi) {
				return usageError{fmt.Errorf("merge: %s and %s are the same file: give each input once", paths[j], p)}
			}
		}
		infos[i] = fi
	}
	return nil
}
