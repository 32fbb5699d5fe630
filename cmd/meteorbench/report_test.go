package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/results"
)

const fixtures = "../../internal/report/testdata/"

// execute runs the root command with args and returns its stdout, stderr
// and error.
func execute(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// unlessSuspect returns err, or nil, logged, when run failed only because a
// cell of its own could not be trusted on this busy machine, its results
// written: for a test whose claim is not a timing one (the cell's figures
// are still read and checked).
func unlessSuspect(t *testing.T, err error) error {
	t.Helper()
	if isSuspect(err) {
		t.Logf("run judged a cell suspect on this busy machine (its results written): %v", err)
		return nil
	}
	return err
}

// isSuspect reports whether err is run's exit on cells it could not trust,
// their results written (internal/job).
func isSuspect(err error) bool {
	return err != nil && strings.Contains(err.Error(), "cannot be trusted (results written)")
}

// wantIn checks that out, what a command printed (named by what), holds
// every one of wants.
func wantIn(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, out)
		}
	}
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReportAndCompareBadArguments(t *testing.T) {
	badSchema := writeTemp(t, "old.json", `{"schema":"meteorbench/v0","cells":[]}`)
	notJSON := writeTemp(t, "junk.json", "not json")
	empty := writeTemp(t, "empty.json", "")
	missing := filepath.Join(t.TempDir(), "missing.json")
	good := fixtures + "basic.json"
	cases := []struct {
		name  string
		args  []string
		usage bool   // a bad flag, argument, file or document: exit status 2
		want  string // in the error
	}{
		{"report no file", []string{"report"}, true, "want one RESULT.json"},
		{"report two files", []string{"report", good, good}, true, "want one RESULT.json"},
		{"report unknown format", []string{"report", good, "--format", "yaml"}, true, `unknown format "yaml"`},
		{"report unknown flag", []string{"report", good, "--colour"}, true, "unknown flag"},
		{"report missing file", []string{"report", missing}, true, "no such file"},
		{"report a folder", []string{"report", t.TempDir()}, true, "is a directory"},
		{"merge missing file", []string{"merge", missing}, true, "no such file"},
		{"report bad schema", []string{"report", badSchema}, true, `old.json: not a meteorbench result (schema "meteorbench/v0", want "meteorbench/v1")`},
		{"report not json", []string{"report", notJSON}, true, "junk.json: not a meteorbench result (not JSON: invalid character"},
		{"report empty", []string{"report", empty}, true, "empty.json: not a meteorbench result (empty file)"},
		{"report unwritable out", []string{"report", good, "--out", "/proc/version/x.html"}, true, "--out /proc/version: cannot create the folder"},
		{"compare one file", []string{"compare", good}, true, "want OLD.json and NEW.json"},
		{"compare unknown format", []string{"compare", good, good, "--format", "html"}, true, `--format "html"`},
		{"compare missing old", []string{"compare", missing, good}, true, "no such file"},
		{"compare bad schema new", []string{"compare", good, badSchema}, true, "old.json: not a meteorbench result (schema"},
		{"compare not json", []string{"compare", notJSON, good}, true, "compare: " + notJSON + ": not a meteorbench result (not JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, _, err := execute(t, c.args...)
			if err == nil {
				t.Fatalf("no error; output %q", out)
			}
			var ue usageError
			if errors.As(err, &ue) != c.usage {
				t.Errorf("usage error = %v, want %v (%v)", !c.usage, c.usage, err)
			}
			if msg := err.Error(); !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line containing %q", msg, c.want)
			}
			if out != "" {
				t.Errorf("wrote output despite the error: %q", out[:min(80, len(out))])
			}
		})
	}
}

func TestReportFormats(t *testing.T) {
	dir := t.TempDir()
	in := fixtures + "repeats.json"

	out, _, err := execute(t, "report", in)
	if err != nil || !strings.Contains(out, "== large (GetLargePayloadAsList) · batch 100 · concurrency 4 ==") {
		t.Fatalf("default table: %v\n%s", err, out)
	}

	html := filepath.Join(dir, "r.html")
	if _, stderr, err := execute(t, "report", in, "--out", html); err != nil || !strings.Contains(stderr, "wrote "+html+" (html,") {
		t.Fatalf("html: %v %q", err, stderr)
	}
	if b, _ := os.ReadFile(html); !bytes.Contains(b, []byte("<svg")) || !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) {
		t.Error("--out r.html did not write an HTML page with charts")
	}

	small := fixtures + "openloop.json" // rasterising is slow under -race
	pngPath := filepath.Join(dir, "charts.out")
	if _, _, err := execute(t, "report", small, "--format", "png", "-o", pngPath); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(pngPath + ".png") // --out is a prefix, as run's
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("--format png: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}

	// Binary to a stdout that is not a terminal is fine (a pipe, a file).
	out, _, err = execute(t, "report", small, "--format", "png")
	if err != nil || !strings.HasPrefix(out, "\x89PNG") {
		t.Errorf("png to a pipe: %v", err)
	}

	out, _, err = execute(t, "report", in, "--format", "markdown")
	if err != nil || !strings.HasPrefix(out, "# meteorbench results") {
		t.Errorf("markdown: %v", err)
	}
}

func TestCompareCommand(t *testing.T) {
	out, _, err := execute(t, "compare", fixtures+"compare-old.json", fixtures+"compare-new.json")
	if err != nil {
		t.Fatal(err)
	}
	wantIn(t, "compare's table", out, "GOMAXPROCS  2 → 4", "large/grpc/b100/c4", "(p=0.008 n=5+5)", "Only in old ("+fixtures+"compare-old.json):")
	out, _, err = execute(t, "compare", fixtures+"basic.json", fixtures+"basic.json", "--format", "json")
	if err != nil || !strings.Contains(out, `"schema": "meteorbench-compare/v1"`) || !strings.Contains(out, `"significance": false`) {
		t.Errorf("json: %v\n%.300s", err, out)
	}
}

// A document written before verdicts existed gets them computed by the
// commands, so its report and comparison start with the summary.
func TestOlderDocumentGetsVerdicts(t *testing.T) {
	r, err := results.ReadFile(fixtures + "basic.json")
	if err != nil {
		t.Fatal(err)
	}
	want := r.Verdicts
	r.Verdicts = nil
	var buf bytes.Buffer
	if err := results.Write(&buf, r); err != nil {
		t.Fatal(err)
	}
	old := writeTemp(t, "old.json", buf.String())
	out, _, err := execute(t, "report", old)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range want {
		if !strings.Contains(out, "\n"+v.Summary+"\n") {
			t.Errorf("no summary %q in:\n%s", v.Summary, out)
		}
	}
	out, _, err = execute(t, "compare", old, fixtures+"basic.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "  old  "+want[0].Summary+"\n  new  "+want[0].Summary+"\n") {
		t.Errorf("compare of an older document: no verdicts:\n%s", out)
	}
}

// spoiled writes basic.json with one change made to its decoded JSON.
func spoiled(t *testing.T, spoil func(doc map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile(fixtures + "basic.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	spoil(doc)
	out, _ := json.Marshal(doc)
	return writeTemp(t, "run1.json", string(out))
}

func cell(doc map[string]any, i int) map[string]any {
	return doc["cells"].([]any)[i].(map[string]any)
}

// A bad value is refused by report, compare and merge alike: exit 2, one
// line naming the file and the JSON path; nothing written.
func TestBadDocumentRefused(t *testing.T) {
	neg := spoiled(t, func(d map[string]any) { cell(d, 3)["latency_us"].(map[string]any)["p99"] = -5 })
	conc := spoiled(t, func(d map[string]any) { cell(d, 0)["concurrency"] = -3 })
	for _, args := range [][]string{
		{"report", neg, "--format", "svg"},
		{"compare", fixtures + "basic.json", neg},
		{"merge", neg, fixtures + "basic.json"},
	} {
		out, _, err := execute(t, args...)
		if code := exitCodeQuiet(err); code != 2 || err.Error() != args[0]+": "+neg+": cells[3].latency_us.p99: -5 is negative" || out != "" {
			t.Errorf("%s: exit %d, error %v, %d bytes out", args[0], code, err, len(out))
		}
	}
	if _, _, err := execute(t, "merge", conc, fixtures+"basic.json"); exitCodeQuiet(err) != 2 || !strings.Contains(err.Error(), "cells[0].concurrency: -3 is negative") {
		t.Errorf("merge of concurrency -3: %v", err)
	}
}

// A denormal latency (1e-323 µs: 0 once scaled to ms) draws like any
// other value: the chart's log axis once looped on it forever.
func TestReportDenormalLatency(t *testing.T) {
	doc := spoiled(t, func(d map[string]any) {
		cell(d, 4)["distribution"].([]any)[0].(map[string]any)["us"] = 1e-323 // a large cell: ms
		cell(d, 0)["latency_us"].(map[string]any)["p50"] = 5e-324
	})
	for _, format := range []string{"svg", "html", "table"} {
		done := make(chan error, 1)
		go func() { _, _, err := execute(t, "report", doc, "--format", format); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v", format, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: report of a denormal latency did not end", format)
		}
	}
}

// --format takes a list and --out is a prefix, as for run; an --out with
// a format's extension is that file.
func TestReportFormatListAndPrefix(t *testing.T) {
	dir := t.TempDir()
	in := fixtures + "openloop.json"
	if _, stderr, err := execute(t, "report", in, "--format", "html,svg", "--out", filepath.Join(dir, "r1")); err != nil {
		t.Fatalf("%v %s", err, stderr)
	}
	if _, _, err := execute(t, "report", in, "--out", filepath.Join(dir, "page.md")); err != nil {
		t.Fatal(err)
	}
	got, _ := filepath.Glob(filepath.Join(dir, "*"))
	for i := range got {
		got[i] = filepath.Base(got[i])
	}
	if strings.Join(got, " ") != "page.md r1.html r1.svg" {
		t.Errorf("files %v, want page.md r1.html r1.svg", got)
	}
	out, _, err := execute(t, "report", in, "--format", "table,csv")
	if err != nil || !strings.Contains(out, "== ") || !strings.Contains(out, "\nprotocol,scenario,") {
		t.Errorf("table,csv to stdout: %v\n%.200s", err, out)
	}
}
