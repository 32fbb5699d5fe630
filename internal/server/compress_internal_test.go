package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http/httptest"
	"testing"
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
