package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/meteorbench/meteorbench/internal/job"
	"github.com/meteorbench/meteorbench/internal/output"
	"github.com/meteorbench/meteorbench/internal/report"
)

func newReportCmd() *cobra.Command {
	var (
		formats []string
		out     string
	)
	cmd := &cobra.Command{
		Use:   "report RESULT.json",
		Short: "Render a saved result as a table, Markdown, CSV, HTML page or chart",
		Long: `Render a result document written by 'meteorbench run --out' (schema
meteorbench/v1) in other formats:

Every format starts with the summary: one line per scenario and condition,
how each protocol compares with REST (a document written before verdicts
existed gets them computed here).

  table     aligned terminal text, protocols side by side
  markdown  the summary and tables for a README or a blog post
  csv       one row per cell (columns documented in internal/report.CSVHeader)
  json      the document itself, re-encoded
  html      one self-contained page: environment, settings, tables, SVG charts
  svg, png  every chart in one image: latency percentiles, throughput, bytes
            and server CPU per call, time per batch

--format takes a list (html,png); --out PREFIX writes one file per format,
PREFIX.<ext>, as run does. Without --format the format is --out's extension
(.md, .html, .svg, .png, .csv, .json), else table. PNG is binary: it needs
--out or a redirected stdout.

The document is checked first: at most 64 MiB, every count, rate and
latency finite and within bounds, histograms decoded against the cell's
counts. A bad one is refused (exit 2) naming the file and the JSON path of
its first bad value.`,
		Example: `  meteorbench report result.json
  meteorbench report result.json --out result.html
  meteorbench report result.json --format html,png --out charts   # charts.html, charts.png`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("report: want one RESULT.json argument, got %d", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if !cmd.Flags().Changed("format") {
				formats = []string{"table"}
				if _, f := output.PrefixOf(out, report.Formats, report.Extension); f != "" {
					formats = []string{f}
				}
			}
			if err := report.CheckFormats(formats); err != nil {
				return usageError{fmt.Errorf("report: %w", err)}
			}
			plan := report.OutputPlan(cmd.OutOrStdout(), formats, out, "")
			if err := plan.Check("--out"); err != nil {
				return usageError{fmt.Errorf("report: %w", err)}
			}
			return docError(job.Report(ctx, args[0], plan, cmd.ErrOrStderr()))
		},
	}
	cmd.Flags().StringSliceVarP(&formats, "format", "f", nil, "output `formats`: "+strings.Join(report.Formats, ", ")+" (a list: one after another, or one file each with --out; default: from --out's extension, else table)")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write one file per format to `PREFIX`.<ext> instead of stdout (each replaced atomically; a PREFIX ending in a format's extension loses it)")
	return cmd
}
