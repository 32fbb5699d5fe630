package analysis_test

import (
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/results"
)

// codecCell is a large cell of five repeats at a JSON codec ("" for std).
func codecCell(p api.Protocol, codec string, p50 func(i int) float64) results.Cell {
	c := repeated(p, 5, p50)
	c.Scenario = api.Large
	c.JSONCodec = codec
	return c
}

// codecNoteOf is the first note of the verdict at codec, which codecNotes
// puts first; "" when the verdict has no codec note.
func codecNoteOf(t *testing.T, r *results.Result, codec string) string {
	t.Helper()
	for _, v := range analysis.Verdicts(r) {
		if v.Condition.JSONCodec != codec {
			continue
		}
		for _, n := range v.Notes {
			if strings.HasPrefix(n, "with "+codec+",") {
				return n
			}
		}
		return ""
	}
	t.Fatalf("no verdict at codec %q", codec)
	return ""
}

// The cross-codec line: REST with a faster JSON codec against REST with
// encoding/json, and how gRPC's lead changes, from the verdicts' own
// significance tests.
func TestCodecNote(t *testing.T) {
	restStd := codecCell(api.REST, "", func(i int) float64 { return 5000 + 10*float64(i) })
	grpc := codecCell(api.GRPC, "", func(i int) float64 { return 1000 + 2*float64(i) })
	for _, tc := range []struct {
		name  string
		cells []results.Cell
		codec string
		want  string // the whole note; "" for none
	}{
		{"lead falls", []results.Cell{restStd, grpc,
			codecCell(api.REST, "sonic", func(i int) float64 { return 2000 + 4*float64(i) })}, "sonic",
			"with sonic, REST large is 2.5x faster than with encoding/json (p50); gRPC's lead falls from 5.0x to 2.0x"},
		{"lead grows", []results.Cell{restStd, grpc,
			codecCell(api.REST, "v2", func(i int) float64 { return 8000 + 16*float64(i) })}, "v2",
			"with v2, REST large is 1.60x slower than with encoding/json (p50); gRPC's lead grows from 5.0x to 8.0x"},
		{"lead within noise", []results.Cell{restStd, grpc,
			codecCell(api.REST, "sonic", func(i int) float64 { return 1000 + float64((i+1)%3) })}, "sonic",
			"with sonic, REST large is 5.0x faster than with encoding/json (p50); gRPC's lead of 5.0x falls within noise (±0.6%)"},
		{"codec within noise", []results.Cell{restStd, grpc,
			codecCell(api.REST, "v2", func(i int) float64 { return 5000 + 10*float64((i+2)%5) })}, "v2",
			"with v2, REST large's p50 is within noise (±0.6%) of encoding/json's; gRPC's lead stays at 5.0x"},
		{"no gRPC", []results.Cell{restStd,
			codecCell(api.REST, "sonic", func(i int) float64 { return 2000 + 4*float64(i) })}, "sonic",
			"with sonic, REST large is 2.5x faster than with encoding/json (p50)"},
		{"suspect codec cell", []results.Cell{restStd, grpc,
			func() results.Cell {
				c := codecCell(api.REST, "sonic", func(i int) float64 { return 2000 + 4*float64(i) })
				c.Suspect = []string{"Little's law does not hold"}
				return c
			}()}, "sonic", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := codecNoteOf(t, result(tc.cells...), tc.codec); got != tc.want {
				t.Errorf("note\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// Single measurements are untested: the note still reads, as the verdicts
// do, and names no interval.
func TestCodecNoteSingleMeasurement(t *testing.T) {
	std, sonic := results.Condition{Concurrency: 1}, results.Condition{Concurrency: 1, JSONCodec: "sonic"}
	r := result(
		cell{p: api.REST, s: api.Large, b: 100, c: std, p50: 5000, mean: 5000, callsPerS: 200, sent: 100, recv: 220000}.build(),
		cell{p: api.GRPC, s: api.Large, b: 100, c: std, p50: 1000, mean: 1000, callsPerS: 1000, sent: 60, recv: 100000}.build(),
		cell{p: api.REST, s: api.Large, b: 100, c: sonic, p50: 2000, mean: 2000, callsPerS: 500, sent: 100, recv: 220000}.build(),
	)
	if got, want := codecNoteOf(t, r, "sonic"), "with sonic, REST large is 2.5x faster than with encoding/json (p50); gRPC's lead falls from 5.0x to 2.0x"; got != want {
		t.Errorf("note\n got %q\nwant %q", got, want)
	}
}
