package report

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/meteorbench/meteorbench/internal/output"
	"github.com/meteorbench/meteorbench/internal/results"
)

// OutputPlan is where a command writes its formats: stdout, or one file
// each, PREFIX.<ext> (out, the --out flag). An out that ends in a format's
// extension loses it ("--out r1.html" is the prefix r1). fallback names
// the file the JSON document is saved to when a file cannot be written
// (the table then goes to stdout); "": no fallback. Every command that
// writes a document writes it through such a plan: one way.
func OutputPlan(stdout io.Writer, formats []string, out, fallback string) *output.Plan {
	prefix, _ := output.PrefixOf(out, Formats, Extension)
	p := &output.Plan{Stdout: stdout, Prefix: prefix, Formats: formats, Extension: Extension, Binary: Binary}
	if fallback != "" {
		p.Fallback = output.Fallback{Stdout: "table", Save: "json", Name: fallback}
	}
	return p
}

// Renderer renders r in each format for an output.Plan, stopping when ctx
// is cancelled.
func Renderer(ctx context.Context, r *results.Result) output.Render {
	return func(w io.Writer, format string) error { return WriteContext(ctx, w, format, r) }
}

// CheckFormats checks a --format list: known formats, each once.
func CheckFormats(formats []string) error {
	if len(formats) == 0 {
		return errors.New("--format: no value")
	}
	seen := map[string]bool{}
	for _, f := range formats {
		if err := CheckFormat(f); err != nil {
			return fmt.Errorf("--format: %w", err)
		}
		if seen[f] {
			return fmt.Errorf("--format %q given twice", f)
		}
		seen[f] = true
	}
	return nil
}

// RunOutput is the output plan of run and capacity, checked: formats to
// stdout or one file each (out), and reportFile, a report in the format
// of its extension; the JSON document falls back to meteorbench.json (the
// job names it after the run's start).
func RunOutput(stdout io.Writer, formats []string, out, reportFile string) (*output.Plan, error) {
	if err := CheckFormats(formats); err != nil {
		return nil, err
	}
	p := OutputPlan(stdout, formats, out, "meteorbench.json")
	if reportFile != "" {
		format, ok := FormatForPath(reportFile)
		if !ok {
			return nil, fmt.Errorf("--report %q: name a file ending in .html, .svg, .png, .md, .csv or .json", reportFile)
		}
		p.Extra = []output.File{{Path: reportFile, Format: format}}
	}
	return p, p.Check("--out")
}
