package report

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/results"
)

// fuzzFormats are the formats rendered in pure Go that the fuzz target
// draws (png rasterises the svg: the same chart code, ten times slower).
var fuzzFormats = []string{"table", "markdown", "csv", "svg"}

// FuzzReadAndRender reads any bytes as a result document the way report,
// compare and merge do (results.ReadLimited: size, shape, every value),
// renders every document it accepts and compares it with itself. Properties: nothing panics;
// rendering ends (a denormal latency once made the svg loop forever);
// an accepted document round-trips: re-encoded, it is accepted again and
// encodes to the same bytes. Seeded from testdata/*.json.
//
//	go test -run '^$' -fuzz FuzzReadAndRender -fuzztime 30s ./internal/report
func FuzzReadAndRender(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, p := range seeds {
		r, err := results.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(small(r))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := results.ReadLimited(context.Background(), bytes.NewReader(data))
		if err != nil {
			return // refused: fine, as long as nothing panicked
		}
		var enc bytes.Buffer
		if err := results.Write(&enc, r); err != nil {
			t.Fatalf("an accepted document does not encode: %v", err)
		}
		again, err := results.ReadLimited(context.Background(), bytes.NewReader(enc.Bytes()))
		if err != nil {
			t.Fatalf("an accepted document, re-encoded, is refused: %v", err)
		}
		var enc2 bytes.Buffer
		results.Write(&enc2, again)
		if !bytes.Equal(enc.Bytes(), enc2.Bytes()) {
			t.Fatal("the document changes on a second round trip")
		}
		if r.Verdicts == nil {
			analysis.Apply(r) // as the commands do for an older document
		}
		for _, format := range fuzzFormats {
			renderBounded(t, r, format)
		}
		// compare reads the same documents: the document against itself.
		for _, format := range CompareFormats {
			if err := WriteComparison(&bytes.Buffer{}, format, Compare(r, again)); err != nil {
				t.Fatalf("compare, %s: %v", format, err)
			}
		}
	})
}

// small is r cut to two cells (or capacity series) of two probes, without
// verdicts, as compact JSON: a few KB the fuzzer mutates quickly, with the
// shape of the whole.
func small(r *results.Result) []byte {
	r.Cells = r.Cells[:min(2, len(r.Cells))]
	r.Capacity = r.Capacity[:min(2, len(r.Capacity))]
	for i := range r.Capacity {
		r.Capacity[i].Probes = r.Capacity[i].Probes[:min(2, len(r.Capacity[i].Probes))]
	}
	r.Verdicts = nil
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return b
}

// renderBounded renders r in format and fails when it takes over 20 s:
// no accepted document may hang a reporter. A rendering error is allowed
// (gonum refuses some ranges), a panic is not.
func renderBounded(t *testing.T, r *results.Result, format string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var buf bytes.Buffer
		WriteContext(ctx, &buf, format, r)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: rendering did not end within 20 s", format)
	}
}
