// Package report renders a results.Result — the aggregates of a run, never a
// raw sample — in the formats a load-testing user expects: an aligned
// terminal table, the stable JSON document, CSV, Markdown for a README or a
// blog post, a self-contained HTML page, and charts as SVG or PNG. It also
// compares two result documents cell by cell (see Compare).
//
// Reporters only format; they compute no verdict. Every format starts,
// after the environment, with the summary: one line per verdict of
// r.Verdicts (computed by package analysis), e.g. "large: gRPC 3.9x [3.6,
// 4.4] more calls/s, 2.2x fewer bytes, ...". Text formats then put the
// protocols side by side, one column each, one section per scenario x batch
// x condition, the verdict's per-protocol ratios under the last section it
// pools. A document without verdicts has no summary: call analysis.Apply
// first.
//
// Reporters are chosen by name (see Formats). Live writes the table format
// section by section while a run measures.
package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/meteorbench/meteorbench/internal/results"
)

// Formats are the names Write accepts, text formats first.
//
//   - table: aligned terminal text
//   - json: the "meteorbench/v1" document (results.Write)
//   - jsonl: the same document on one line (JSON Lines, results.WriteLine):
//     a load generator's result in a log stream (deploy/swarm)
//   - csv: one row per cell, columns CSVHeader
//   - markdown: tables for a README or a blog post
//   - html: one self-contained page (inline CSS and SVG charts, no external resources)
//   - svg: every chart in one image, as panels
//   - png: the same image as svg, rasterised (binary: never write it to a terminal)
var Formats = []string{"table", "json", "jsonl", "csv", "markdown", "html", "svg", "png"}

// CheckFormat returns an error naming the accepted formats when format is
// not one of Formats.
func CheckFormat(format string) error {
	for _, f := range Formats {
		if f == format {
			return nil
		}
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

// Binary reports whether format produces binary output (png), which must
// not be written to a terminal.
func Binary(format string) bool { return format == "png" }

var extensions = map[string]string{
	"table": ".txt", "json": ".json", "jsonl": ".jsonl", "csv": ".csv", "markdown": ".md",
	"html": ".html", "svg": ".svg", "png": ".png",
}

// Extension returns the usual file extension of format (".md" for
// markdown), or "" for an unknown format.
func Extension(format string) string { return extensions[format] }

// FormatForPath guesses a format from a file name's extension (".htm" and
// ".markdown" included); ok is false when the extension says nothing.
func FormatForPath(path string) (format string, ok bool) {
	ext := strings.ToLower(filepath.Ext(path))
	switch ext {
	case ".htm":
		return "html", true
	case ".markdown":
		return "markdown", true
	}
	for f, e := range extensions {
		if e == ext && f != "table" {
			return f, true
		}
	}
	return "", false
}

// Write renders r in format to w. Output is produced in memory first, so a
// failed rendering writes nothing.
func Write(w io.Writer, format string, r *results.Result) error {
	return WriteContext(context.Background(), w, format, r)
}

// WriteContext is Write that stops, with ctx's cause, when ctx is
// cancelled: the charts check it between panels, the other formats before
// they start (they take milliseconds for a run's document, about a second
// for a document of MaxDocumentSize).
func WriteContext(ctx context.Context, w io.Writer, format string, r *results.Result) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if r == nil {
		return errors.New("report: no result")
	}
	var buf bytes.Buffer
	var err error
	switch format {
	case "table":
		err = writeTable(&buf, r)
	case "json":
		err = results.Write(&buf, r)
	case "jsonl":
		err = results.WriteLine(&buf, r)
	case "csv":
		err = writeCSV(&buf, r)
	case "markdown":
		err = writeMarkdown(&buf, r)
	case "html":
		err = writeHTML(ctx, &buf, r)
	case "svg":
		err = writeSVG(ctx, &buf, r)
	case "png":
		err = writePNG(ctx, &buf, r)
	default:
		return fmt.Errorf("report: %w", CheckFormat(format))
	}
	if err != nil {
		if ctx.Err() != nil {
			return err // the cause, not a rendering failure
		}
		return fmt.Errorf("report: %s: %w", format, err)
	}
	_, err = buf.WriteTo(w)
	return err
}
