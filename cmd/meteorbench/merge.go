package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/meteorbench/meteorbench/internal/merge"
	"github.com/meteorbench/meteorbench/internal/output"
	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/results"
)

func newMergeCmd() *cobra.Command {
	var (
		formats []string
		out     string
		quiet   bool
	)
	cmd := &cobra.Command{
		Use:   "merge A.json B.json [...]",
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
different counts are refused.`,
		Example: `  meteorbench merge seg1.json seg2.json seg3.json --out merged
  meteorbench merge seg*.json --format table`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageError{fmt.Errorf("merge: want two or more RESULT.json files, got %d", len(args))}
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
			var inputs []merge.Input
			for _, path := range args {
				r, err := readResult(ctx, path)
				if err != nil {
					return fmt.Errorf("merge: %w", err)
				}
				inputs = append(inputs, merge.Input{Name: path, Result: r})
			}
			res, err := interruptible(ctx, func() (*results.Result, error) { return merge.Merge(ctx, inputs) })
			if err != nil {
				return err
			}
			if !quiet {
				describeMerge(cmd.ErrOrStderr(), res)
			}
			plan.Fallback.Name = "meteorbench-merged-" + res.Started.Format("20060102-150405") + ".json"
			plan.Wrote = func(f output.File, _ int) { fmt.Fprintf(cmd.ErrOrStderr(), "meteorbench merge: wrote %s\n", f.Path) }
			if err := plan.Write(ctx, report.Renderer(ctx, res)); err != nil {
				return fmt.Errorf("merge: %w", err)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&formats, "format", []string{"json"}, "output formats: "+strings.Join(report.Formats, ", "))
	fl.StringVar(&out, "out", "", "write one file per format to PREFIX.<ext> instead of stdout (a PREFIX ending in a format's extension loses it)")
	fl.BoolVarP(&quiet, "quiet", "q", false, "no summary of the inputs on stderr")
	return cmd
}

// sameFiles refuses a file given twice, under any name.
func sameFiles(paths []string) error {
	infos := make([]os.FileInfo, len(paths))
	for i, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("merge: %w", err)
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

// describeMerge says on stderr what was merged: the segments and each
// instance's start offset.
func describeMerge(w io.Writer, r *results.Result) {
	m := r.Merged
	fmt.Fprintf(w, "meteorbench merge: %s\n", m.Segments)
	for _, in := range m.Instances {
		seg := "whole run"
		if in.Segment != nil {
			seg = "segment " + in.Segment.String()
		}
		off := "no --start-at"
		if in.StartOffsetUS != nil {
			off = fmt.Sprintf("started %+.3f ms after --start-at", *in.StartOffsetUS/1e3)
		}
		fmt.Fprintf(w, "  %s: %s, %d calls, %s, %s\n", in.File, seg, in.Calls, off, in.StopReason)
	}
}
