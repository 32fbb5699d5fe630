package output

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/term"
)

// Render writes the document in format to w.
type Render func(w io.Writer, format string) error

// A Plan says where a command's output goes: every format to Stdout one
// after another, or with a Prefix one file per format, PREFIX.<ext>; and
// Extra files named in full (run --report). The zero Fallback gives none.
type Plan struct {
	Stdout  io.Writer
	Prefix  string   // "" writes the formats to Stdout
	Formats []string // in order
	Extra   []File
	// Extension is a format's file extension (".md"); Binary says a
	// format must not go to a terminal.
	Extension func(format string) string
	Binary    func(format string) bool
	// Fallback, when a file cannot be written: the document still reaches
	// the user. Its Stdout format goes to Stdout (unless it went there
	// already) and its Save format to a file named Name in the temporary
	// folder, else in the working one; the error says where.
	Fallback Fallback
	// Wrote is told of each file written, with its size.
	Wrote func(f File, size int)
}

// A File is one output file and its format.
type File struct{ Path, Format string }

// Fallback is what a Plan does when a file cannot be written; the zero
// value does nothing.
type Fallback struct {
	Stdout string // a format for stdout ("table"); "" for none
	Save   string // a format to save elsewhere ("json"); "" for none
	Name   string // the saved file's name
}

// PrefixOf is an --out value as a prefix: a value that ends in the
// extension of a format already ("r1.html") loses it, so both "--out r1"
// and "--out r1.html" give r1.html for html. format is that format, "" when
// the value has none of the extensions.
func PrefixOf(out string, formats []string, extension func(string) string) (prefix, format string) {
	ext := filepath.Ext(out)
	for _, f := range formats {
		if ext != "" && strings.EqualFold(extension(f), ext) {
			return strings.TrimSuffix(out, ext), f
		}
	}
	return out, ""
}

// Files are the files the plan writes, in order.
func (p *Plan) Files() []File {
	var out []File
	if p.Prefix != "" {
		for _, f := range p.Formats {
			out = append(out, File{p.Prefix + p.Extension(f), f})
		}
	}
	return append(out, p.Extra...)
}

// Check refuses a binary format meant for a terminal, and makes the
// folders of every file, trying a file in each: a command calls it before
// doing any work, so a bad flag fails at once. flag names the option.
func (p *Plan) Check(flag string) error {
	if p.Prefix == "" && IsTerminal(p.Stdout) {
		for _, f := range p.Formats {
			if p.Binary != nil && p.Binary(f) {
				return fmt.Errorf("--format %s is binary: give %s or redirect stdout", f, flag)
			}
		}
	}
	for _, f := range p.Files() {
		fl := flag
		if slices.Contains(p.Extra, f) {
			fl = "--report"
		}
		if err := PrepareDir(fl, f.Path); err != nil {
			return err
		}
	}
	return nil
}

// Write renders every format where the plan says. A file is rendered in
// memory first and written with WriteFile, so a failure leaves any older
// file whole. When a file fails, the others are still written and the
// Fallback runs; the error names every failure and where the fallback
// went. ctx is checked between formats.
func (p *Plan) Write(ctx context.Context, render Render) error {
	var errs []error
	toStdout := map[string]bool{}
	if p.Prefix == "" {
		for i, f := range p.Formats {
			if err := context.Cause(ctx); ctx.Err() != nil {
				return err
			}
			if i > 0 {
				fmt.Fprintln(p.Stdout)
			}
			if err := render(p.Stdout, f); err != nil {
				errs = append(errs, err)
			}
			toStdout[f] = true
		}
	}
	for _, f := range p.Files() {
		if err := context.Cause(ctx); ctx.Err() != nil {
			return err
		}
		if err := p.writeFile(render, f); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.Path, err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(append(errs, p.fallback(render, toStdout)...)...)
}

func (p *Plan) writeFile(render Render, f File) error {
	var buf bytes.Buffer
	if err := render(&buf, f.Format); err != nil {
		return err
	}
	if err := WriteFile(f.Path, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if p.Wrote != nil {
		p.Wrote(f, buf.Len())
	}
	return nil
}

// fallback puts the document where it can after a failed file: the
// measurement is never lost to an unwritable --out.
func (p *Plan) fallback(render Render, toStdout map[string]bool) []error {
	fb := p.Fallback
	var errs []error
	if fb.Stdout != "" && !toStdout[fb.Stdout] {
		fmt.Fprintln(p.Stdout)
		if err := render(p.Stdout, fb.Stdout); err != nil {
			errs = append(errs, err)
		}
	}
	if fb.Save == "" {
		return errs
	}
	for _, dir := range []string{os.TempDir(), "."} {
		path := filepath.Join(dir, fb.Name)
		if err := p.writeFile(render, File{path, fb.Save}); err == nil {
			return append(errs, fmt.Errorf("the result was saved to %s instead", path))
		}
	}
	return append(errs, errors.New("the result could not be saved anywhere: the table above is all that is left"))
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
