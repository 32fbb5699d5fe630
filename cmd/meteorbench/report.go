package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/results"
)

func newReportCmd() *cobra.Command {
	var format, out string
	cmd := &cobra.Command{
		Use:   "report RESULT.json",
		Short: "Render a saved result as a table, Markdown, CSV, HTML page or chart",
		Long: `Render a result document written by 'meteorbench run --out' (schema
meteorbench/v1) in another format:

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

The format defaults to the extension of --out (.md, .html, .svg, .png, .csv,
.json), else table. PNG is binary: it needs --out or a redirected stdout.`,
		Example: `  meteorbench report result.json
  meteorbench report result.json --out result.html
  meteorbench report result.json --format png --out charts.png`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("report: want one RESULT.json argument, got %d", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := reportFormat(format, cmd.Flags().Changed("format"), out)
			if err != nil {
				return usageError{fmt.Errorf("report: %w", err)}
			}
			stdout := cmd.OutOrStdout()
			if out == "" && report.Binary(format) && isTerminal(stdout) {
				return usageError{fmt.Errorf("report: %s is binary: give --out FILE or redirect stdout", format)}
			}
			r, err := readResult(args[0])
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			if out == "" {
				return report.Write(stdout, format, r)
			}
			n, err := writeReportFile(out, format, r)
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "meteorbench report: wrote %s (%s, %d bytes)\n", out, format, n)
			return nil
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "", "output `format`: "+strings.Join(report.Formats, ", ")+" (default: from --out's extension, else table)")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write to `FILE` instead of stdout (replaced atomically)")
	return cmd
}

// reportFormat picks the format: the flag when given, else the extension
// of out, else table.
func reportFormat(flag string, changed bool, out string) (string, error) {
	if !changed {
		if f, ok := report.FormatForPath(out); ok {
			return f, nil
		}
		return "table", nil
	}
	if err := report.CheckFormat(flag); err != nil {
		return "", fmt.Errorf("--format: %w", err)
	}
	return flag, nil
}

// readResult reads a result document for report and compare. Anything
// that does not decode as a meteorbench/v1 document is "not a meteorbench
// result", with the reason: a raw decoder error names no file and no
// remedy. A document written before verdicts existed gets them computed,
// so every format can show its summary.
func readResult(path string) (*results.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := results.Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: not a meteorbench result (%s)", path, notResultReason(err))
	}
	if r.Verdicts == nil {
		analysis.Apply(r)
	}
	return r, nil
}

// notResultReason says why results.Read refused a document, without the
// package prefixes.
func notResultReason(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return "empty file"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "truncated JSON"
	case errors.As(err, &syntax):
		return fmt.Sprintf("not JSON: %v at byte %d", syntax, syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("JSON of another shape: %v", typ)
	}
	return strings.TrimPrefix(strings.TrimPrefix(err.Error(), "results: "), "decode: ")
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// writeReportFile renders r in format and writes it to path atomically,
// returning the size written. Rendering happens first, so a failure leaves
// any existing file untouched.
func writeReportFile(path, format string, r *results.Result) (int, error) {
	var buf bytes.Buffer
	if err := report.Write(&buf, format, r); err != nil {
		return 0, err
	}
	if err := writeFileAtomic(path, buf.Bytes()); err != nil {
		return 0, err
	}
	return buf.Len(), nil
}

// writeFileAtomic writes data to a temporary file next to path and renames
// it into place, so a reader never sees half a report.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename this fails harmlessly
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
