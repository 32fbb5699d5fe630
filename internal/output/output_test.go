package output

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// leftovers are the temporary files WriteFile left in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	return m
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	if err := WriteFile(p, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if string(b) != "two" || fi.Mode().Perm() != 0o600 {
		t.Errorf("content %q, mode %v", b, fi.Mode().Perm())
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("left behind: %v", l)
	}
}

// A rename that fails (the path is a folder with files in it) removes the
// temporary file and leaves what was there.
func TestWriteFileFailureRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "taken")
	os.MkdirAll(filepath.Join(p, "inside"), 0o755)
	if err := WriteFile(p, []byte("data"), 0o644); err == nil {
		t.Fatal("no error renaming over a folder")
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("left behind: %v", l)
	}
	if fi, err := os.Stat(filepath.Join(p, "inside")); err != nil || !fi.IsDir() {
		t.Errorf("the folder was touched: %v", err)
	}
	// A folder that does not exist: nothing is created.
	if err := WriteFile(filepath.Join(dir, "missing", "r.json"), []byte("x"), 0o644); err == nil {
		t.Fatal("no error in a missing folder")
	}
}

func TestPrefixOf(t *testing.T) {
	ext := func(f string) string { return map[string]string{"html": ".html", "png": ".png", "table": ".txt"}[f] }
	formats := []string{"table", "html", "png"}
	for _, tt := range []struct{ out, prefix, format string }{
		{"r1", "r1", ""},
		{"r1.html", "r1", "html"},
		{"dir/r1.PNG", "dir/r1", "png"},
		{"results/run.1", "results/run.1", ""},
	} {
		if p, f := PrefixOf(tt.out, formats, ext); p != tt.prefix || f != tt.format {
			t.Errorf("PrefixOf(%q) = %q, %q; want %q, %q", tt.out, p, f, tt.prefix, tt.format)
		}
	}
}

func plan(stdout io.Writer, prefix string, formats ...string) *Plan {
	return &Plan{Stdout: stdout, Prefix: prefix, Formats: formats,
		Extension: func(f string) string { return "." + f },
		Binary:    func(f string) bool { return f == "png" }}
}

func render(w io.Writer, format string) error {
	if format == "bad" {
		return errors.New("cannot render bad")
	}
	_, err := fmt.Fprintf(w, "<%s>", format)
	return err
}

// To stdout the formats come one after another; with a prefix, one file
// each, and Extra files named in full.
func TestPlanWrite(t *testing.T) {
	var out bytes.Buffer
	if err := plan(&out, "", "table", "json").Write(context.Background(), render); err != nil {
		t.Fatal(err)
	}
	if out.String() != "<table>\n<json>" {
		t.Errorf("stdout %q", out.String())
	}
	dir := t.TempDir()
	p := plan(&out, filepath.Join(dir, "sub", "r1"), "html", "png")
	p.Extra = []File{{filepath.Join(dir, "page.md"), "markdown"}}
	var wrote []string
	p.Wrote = func(f File, n int) { wrote = append(wrote, fmt.Sprintf("%s %d", filepath.Base(f.Path), n)) }
	if err := p.Check("--out"); err != nil {
		t.Fatal(err)
	}
	if err := p.Write(context.Background(), render); err != nil {
		t.Fatal(err)
	}
	if strings.Join(wrote, ",") != "r1.html 6,r1.png 5,page.md 10" {
		t.Errorf("wrote %v", wrote)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub", "r1.png")); string(b) != "<png>" {
		t.Errorf("r1.png holds %q", b)
	}
}

// A file that cannot be written: the others still are, the fallback puts
// the table on stdout and the document in the temporary folder, and the
// error says both.
func TestPlanFallback(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	var out bytes.Buffer
	p := plan(&out, filepath.Join(dir, "r1"), "bad", "csv")
	p.Fallback = Fallback{Stdout: "table", Save: "json", Name: "saved.json"}
	err := p.Write(context.Background(), render)
	if err == nil || !strings.Contains(err.Error(), "r1.bad: cannot render bad") || !strings.Contains(err.Error(), "saved to "+filepath.Join(tmp, "saved.json")) {
		t.Fatalf("error %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "r1.csv")); string(b) != "<csv>" {
		t.Errorf("the good file: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(tmp, "saved.json")); string(b) != "<json>" || out.String() != "\n<table>" {
		t.Errorf("fallback file %q, stdout %q", b, out.String())
	}
	// Without a fallback, only the error.
	out.Reset()
	p.Fallback = Fallback{}
	if err := p.Write(context.Background(), render); err == nil || out.Len() != 0 {
		t.Errorf("no fallback: %v, stdout %q", err, out.String())
	}
}

// A cancelled context writes nothing more and returns its cause.
func TestPlanCancelled(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("stop")
	cancel(stop)
	dir := t.TempDir()
	if err := plan(io.Discard, filepath.Join(dir, "r1"), "csv").Write(ctx, render); !errors.Is(err, stop) {
		t.Fatalf("error %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) > 0 {
		t.Errorf("wrote %v", m)
	}
}

// Check refuses what would fail after the work: a folder that cannot be
// made.
func TestPlanCheck(t *testing.T) {
	if err := plan(io.Discard, "/proc/version/x/r1", "csv").Check("--out"); err == nil || !strings.Contains(err.Error(), "--out /proc/version/x: cannot create the folder") {
		t.Errorf("error %v", err)
	}
}
