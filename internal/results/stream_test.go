package results

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// A stream is one document in any layout, or JSON Lines: blank lines
// skipped, every other line a document checked like a file, an error
// naming its line.
func TestReadDocuments(t *testing.T) {
	var pretty, line bytes.Buffer
	if err := Write(&pretty, doc(t)); err != nil {
		t.Fatal(err)
	}
	if err := WriteLine(&line, doc(t)); err != nil {
		t.Fatal(err)
	}
	if bytes.Count(line.Bytes(), []byte("\n")) != 1 || !bytes.HasSuffix(line.Bytes(), []byte("\n")) {
		t.Fatalf("WriteLine wrote %d lines", bytes.Count(line.Bytes(), []byte("\n")))
	}
	read := func(s string) ([]Document, error) { return ReadDocuments(context.Background(), strings.NewReader(s)) }
	l := strings.TrimSuffix(line.String(), "\n")

	for _, tt := range []struct {
		name  string
		in    string
		lines []int
	}{
		{"one indented document", "\n\n" + pretty.String(), []int{0}},
		{"one line", l, []int{1}},
		{"JSON Lines, blank lines and CRLF", "\n" + l + "\r\n\n" + l + "\n" + l, []int{2, 4, 5}},
	} {
		docs, err := read(tt.in)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		var got []int
		for _, d := range docs {
			got = append(got, d.Line)
			if d.Result == nil || d.Result.Cells[0].Calls != 3 {
				t.Errorf("%s: line %d: %+v", tt.name, d.Line, d.Result)
			}
		}
		if len(got) != len(tt.lines) || (len(got) > 0 && got[len(got)-1] != tt.lines[len(tt.lines)-1]) || got[0] != tt.lines[0] {
			t.Errorf("%s: documents on lines %v, want %v", tt.name, got, tt.lines)
		}
	}

	var nr *NotResultError
	var inv *InvalidError
	var le *LineError
	if _, err := read("\n \n"); !errors.As(err, &nr) || !errors.Is(err, io.EOF) {
		t.Errorf("blank input: %v, want an empty document", err)
	}
	if _, err := read(l + "\n" + l[:len(l)/2] + "\n" + l); !errors.As(err, &le) || le.Line != 2 || !errors.As(err, &nr) {
		t.Errorf("a truncated line 2: %v", err)
	}
	bad := strings.Replace(l, `"calls":3`, `"calls":-3`, 1)
	if _, err := read(l + "\n" + bad); !errors.As(err, &le) || le.Line != 2 || !errors.As(err, &inv) || !strings.Contains(err.Error(), "cells[0].calls") {
		t.Errorf("a bad value on line 2: %v", err)
	}
	if _, err := read(l + "\n[1]"); !errors.As(err, &le) || le.Line != 2 {
		t.Errorf("another kind of JSON on line 2: %v", err)
	}
	// A line longer than a document may be is refused without reading on.
	huge := l + "\n" + strings.Repeat(" ", MaxDocumentSize+2) + "\n"
	if _, err := read(huge); !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ErrTooLarge) {
		t.Errorf("a line past MaxDocumentSize: %v", err)
	}
}
