package restcall

// Compression (call.Options.Compress = gzip). The transport's own gzip
// stays off (DisableCompression): when Go's transport adds Accept-Encoding
// itself it also inflates out of sight, and the adapters would not know
// what they are measuring. Instead GETs send "Accept-Encoding: gzip" and
// POST bodies go gzipped with "Content-Encoding: gzip", and a gzip answer
// is inflated here, as it is read:
//
//   - bytes per call are counted at the socket (wire.Dialer): the
//     compressed bytes, headers included;
//   - inflating is part of reading the answer, so it is in LastByte, and
//     Decode stays the unmarshalling alone, on every protocol alike:
//     grpc-go also inflates a message before its codec sees it, so the gRPC
//     adapter's Decode (timed around the codec) leaves it out too. The
//     client CPU per call has all of it. For post, compressing the request
//     is part of the call, like marshalling it.
//
// Level: gzip.DefaultCompression, grpc-go's too.

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// gzipReaders recycles inflaters across calls (they are shared by a
// client's callers).
var gzipReaders sync.Pool

// bodyGzipper compresses one caller's request bodies with one reused
// writer (a flate writer is about 1 MB of state).
type bodyGzipper struct{ zw *gzip.Writer }

// compress returns b gzipped, in a new slice: the transport may still be
// reading the last call's body after RoundTrip returned.
func (g *bodyGzipper) compress(b []byte) []byte {
	out := bytes.NewBuffer(make([]byte, 0, len(b)/3+64))
	if g.zw == nil {
		g.zw, _ = gzip.NewWriterLevel(out, gzip.DefaultCompression) // the level is valid
	} else {
		g.zw.Reset(out)
	}
	_, _ = g.zw.Write(b) // a bytes.Buffer does not fail
	_ = g.zw.Close()
	g.zw.Reset(nil)
	return out.Bytes()
}

// inflate replaces a gzip answer's body with its inflated content. An
// identity answer is left alone (a server may decline to compress); any
// other coding is an invalid response.
func inflate(resp *http.Response) error {
	ce := resp.Header.Get("Content-Encoding")
	switch {
	case ce == "", strings.EqualFold(ce, "identity"):
		return nil
	case !strings.EqualFold(ce, "gzip"):
		return call.Invalid("content encoding %q", ce)
	}
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(resp.Body)
	} else {
		err = zr.Reset(resp.Body)
	}
	if err != nil {
		if zr != nil {
			gzipReaders.Put(zr)
		}
		return gzipErr(err)
	}
	resp.Body = &gunzipBody{zr: zr, body: resp.Body}
	return nil
}

// gunzipBody reads an answer through an inflater.
type gunzipBody struct {
	zr   *gzip.Reader
	body io.ReadCloser
}

func (g *gunzipBody) Read(p []byte) (int, error) {
	if g.zr == nil {
		return 0, errors.New("read after close")
	}
	n, err := g.zr.Read(p)
	return n, gzipErr(err)
}

// Close reads what is left of the raw body (nothing, normally: the
// inflater reads to its end, looking for another member), so the
// connection goes back to the pool, then recycles the inflater.
func (g *gunzipBody) Close() error {
	_, _ = io.CopyN(io.Discard, g.body, MaxBody)
	err := g.body.Close()
	if g.zr != nil {
		gzipReaders.Put(g.zr)
		g.zr = nil
	}
	return err
}

// gzipErr makes bad gzip an invalid response; read errors (a broken
// connection) stay transport errors.
func gzipErr(err error) error {
	var ce flate.CorruptInputError
	switch {
	case err == nil, err == io.EOF:
		return err
	case errors.Is(err, gzip.ErrHeader), errors.Is(err, gzip.ErrChecksum), errors.As(err, &ce):
		return call.Invalid("bad gzip: %v", err)
	}
	return err
}
