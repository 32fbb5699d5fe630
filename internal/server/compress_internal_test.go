package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http/httptest"
	"testing"
	"time"
)

// TestGzipStreamFlushes: a gzip stream still delivers its first record at
// once (a sync flush: the client can inflate it before anything else is
// sent), buffers the rest, and ends as one valid gzip stream.
func TestGzipStreamFlushes(t *testing.T) {
	rec := httptest.NewRecorder()
	rw := &respWriter{ResponseWriter: rec, gzip: true}
	rw.setGzipHeaders()
	out := newStreamOut(rw, nil)
	first := []byte(`{"id":1}` + "\n")
	if _, err := out.Write(first); err != nil {
		t.Fatal(err)
	}
	sent := rec.Body.Len()
	if !rec.Flushed || sent == 0 {
		t.Fatalf("the first record was not flushed (%d B sent)", sent)
	}
	zr, err := gzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(first))
	if _, err := io.ReadFull(zr, got); err != nil || !bytes.Equal(got, first) {
		t.Fatalf("the flushed bytes inflate to %q, %v; want %q", got, err, first)
	}
	second := []byte(`{"id":2}` + "\n")
	if _, err := out.Write(second); err != nil {
		t.Fatal(err)
	}
	if rec.Body.Len() != sent {
		t.Errorf("the second record was sent at once: not buffered")
	}
	out.close()
	all, err := gzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(all)
	if err != nil || string(b) != string(first)+string(second) {
		t.Fatalf("the whole stream inflates to %q, %v", b, err)
	}
	if ce := rec.Header().Get("Content-Encoding"); ce != "gzip" {
		t.Errorf("Content-Encoding %q", ce)
	}
}

func TestAcceptsGzip(t *testing.T) {
	for v, want := range map[string]bool{
		"": false, "gzip": true, "GZIP": true, "x-gzip": true, "identity": false,
		"gzip;q=0": false, "gzip; q=0.0": false, "deflate, br": false, "br, gzip;q=0.3": true,
		"*": true, "*;q=0": false, "*, gzip;q=0": false, "gzip, deflate, br, zstd": true,
	} {
		var vals []string
		if v != "" {
			vals = []string{v}
		}
		if got := acceptsGzip(vals); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestGzipWriterReuse: a pooled writer taken again compresses into its new
// target alone, as a gzip stream of its own, and no longer writes to the
// one it was given back with.
func TestGzipWriterReuse(t *testing.T) {
	var first, second bytes.Buffer
	zw := getGzipWriter(&first)
	if _, err := zw.Write([]byte("first answer")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	putGzipWriter(zw)
	if zw.sink.w != nil {
		t.Fatal("a writer given back still holds its target")
	}
	kept := first.Len()
	for range 3 { // sync.Pool may hand back the same writer or a new one
		second.Reset()
		zw = getGzipWriter(&second)
		if _, err := zw.Write([]byte("second")); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		putGzipWriter(zw)
		for name, b := range map[string][]byte{"first": first.Bytes(), "second": second.Bytes()} {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if want := name + map[string]string{"first": " answer", "second": ""}[name]; string(got) != want {
				t.Fatalf("%s inflates to %q, want %q", name, got, want)
			}
		}
		if first.Len() != kept {
			t.Fatalf("the first target grew from %d to %d B after its writer was given back", kept, first.Len())
		}
	}
}

// BenchmarkGzipWriterReuse: the server's cycle for one small gzip answer
// (take a pooled writer, compress 200 B, close, give it back), interleaved
// with the same cycle where the writer is reset again when given back, as
// it was until 2026-12-06: a reset clears the flate writer's hash tables
// (about 640 KiB). An op is one of each; it reports each one's ns and the
// second's as a multiple of the first's.
func BenchmarkGzipWriterReuse(b *testing.B) {
	body := bytes.Repeat([]byte(`{"name":"Aachen","id":"1"},`), 8)[:200]
	var buf bytes.Buffer
	cycle := func(resetOnPut bool) time.Duration {
		start := time.Now()
		buf.Reset()
		zw := getGzipWriter(&buf)
		_, _ = zw.Write(body)
		_ = zw.Close()
		if resetOnPut {
			zw.Reset(io.Discard)
		}
		putGzipWriter(zw)
		return time.Since(start)
	}
	var once, twice time.Duration
	for b.Loop() {
		once += cycle(false)
		twice += cycle(true)
	}
	b.ReportMetric(float64(once.Nanoseconds())/float64(b.N), "ns-reset-once")
	b.ReportMetric(float64(twice.Nanoseconds())/float64(b.N), "ns-reset-twice")
	if once > 0 {
		b.ReportMetric(float64(twice)/float64(once), "twice/once")
	}
}
