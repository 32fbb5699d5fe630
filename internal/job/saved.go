package job

import (
	"context"
	"fmt"
	"io"

	"github.com/meteorbench/meteorbench/internal/merge"
	"github.com/meteorbench/meteorbench/internal/output"
	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Report is `meteorbench report`: it renders the document at path where
// plan says, each file written named on stderr. Its errors start
// "report: ".
func Report(ctx context.Context, path string, plan *output.Plan, stderr io.Writer) error {
	r, err := Read(ctx, path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	plan.Wrote = func(f output.File, n int) {
		fmt.Fprintf(stderr, "meteorbench report: wrote %s (%s, %d bytes)\n", f.Path, f.Format, n)
	}
	if err := plan.Write(ctx, report.Renderer(ctx, r)); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// Compare is `meteorbench compare`: the two documents compared cell by
// cell (report.Compare), written to w in format. An error reading or
// comparing them starts "compare: ".
func Compare(ctx context.Context, oldPath, newPath, format string, w io.Writer) error {
	old, err := Read(ctx, oldPath)
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	cur, err := Read(ctx, newPath)
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	c, err := interruptible(ctx, func() (*report.Comparison, error) { return report.Compare(old, cur), nil })
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	c.Old.Name, c.New.Name = oldPath, newPath
	return report.WriteComparison(w, format, c)
}

// Merge is `meteorbench merge`: the documents at paths merged into one
// (merge.Merge), written where plan says; unless quiet, stderr says what
// was merged and each file written. An error reading an input is
// prefixed "merge: ", as is one writing the result; merge.Merge's own
// errors name what did not fit.
func Merge(ctx context.Context, paths []string, stdin io.Reader, plan *output.Plan, stderr io.Writer, quiet bool) error {
	var inputs []merge.Input
	for _, path := range paths {
		docs, err := ReadAll(ctx, path, stdin)
		if err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		inputs = append(inputs, docs...)
	}
	res, err := interruptible(ctx, func() (*results.Result, error) { return merge.Merge(ctx, inputs) })
	if err != nil {
		return err
	}
	if !quiet {
		describeMerge(stderr, res)
	}
	plan.Fallback.Name = "meteorbench-merged-" + res.Started.Format("20060102-150405") + ".json"
	plan.Wrote = func(f output.File, _ int) { fmt.Fprintf(stderr, "meteorbench merge: wrote %s\n", f.Path) }
	if err := plan.Write(ctx, report.Renderer(ctx, res)); err != nil {
		return fmt.Errorf("merge: %w", err)
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
