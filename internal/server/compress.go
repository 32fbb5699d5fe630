package server

// Compression. Both protocols can be asked for gzip, and neither compresses
// for a client that does not ask:
//
//   - gRPC: grpc-go's per-message gzip, registered by the import below. A
//     client that sends "grpc-encoding: gzip" gets its answers compressed
//     with gzip too; the MaxRecvMsgSize limit applies to the decompressed
//     message (grpc-go checks it while decompressing).
//   - REST: "Content-Encoding: gzip" both ways. A data call whose request
//     accepts gzip (Accept-Encoding) gets a gzip answer, whatever its size
//     (as gRPC compresses every message, so tiny answers grow); a request
//     body in gzip is inflated with MaxBody applied to the inflated size
//     (413 beyond it, however small the compressed body: a gzip bomb).
//     Whole answers are compressed into a buffer and sent with their
//     compressed Content-Length; streams are compressed as one gzip stream
//     whose flushes (the first record, each 32 KiB of output) still reach
//     the client. Errors, /healthz and identity answers are byte for byte
//     what they were before compression existed.
//
// Level: gzip.DefaultCompression (flate level 6, grpc-go's default too), so
// the two protocols pay the same price per byte. Writers and readers are
// pooled: a flate writer is about 1 MB of state.

import (
	"compress/flate"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	_ "google.golang.org/grpc/encoding/gzip" // gRPC per-message gzip, on request
)

// gzipLevel is the compression level of REST answers (and, by default,
// grpc-go's).
const gzipLevel = gzip.DefaultCompression

var (
	hdrGzip = []string{"gzip"}
	hdrVary = []string{"Accept-Encoding"}
)

// gzipWriter is a pooled gzip writer. It writes through sink, whose
// target is set when the writer is taken and dropped when it is given
// back, so that a pooled writer holds no connection's or buffer's memory;
// a gzip Reset clears about 640 KiB of the flate writer's hash tables, so
// the writer is reset once a use (when taken), not again to let go of its
// target (BenchmarkGzipWriterReuse).
type gzipWriter struct {
	*gzip.Writer
	sink *redirect
}

// redirect writes to w.
type redirect struct{ w io.Writer }

func (r *redirect) Write(p []byte) (int, error) { return r.w.Write(p) }

var gzipWriters = sync.Pool{New: func() any {
	sink := &redirect{}
	w, _ := gzip.NewWriterLevel(sink, gzipLevel) // the level is valid
	return &gzipWriter{Writer: w, sink: sink}
}}

var gzipReaders sync.Pool // *gzip.Reader; New cannot make one without input

// getGzipWriter is a writer that compresses into w, as new.
func getGzipWriter(w io.Writer) *gzipWriter {
	zw := gzipWriters.Get().(*gzipWriter)
	zw.sink.w = w
	zw.Reset(zw.sink)
	return zw
}

// putGzipWriter gives zw back; it is not used again.
func putGzipWriter(zw *gzipWriter) {
	zw.sink.w = nil
	gzipWriters.Put(zw)
}

// acceptsGzip reads Accept-Encoding: true when gzip (or x-gzip) is listed
// with a q above 0, or "*" is and gzip is not refused.
func acceptsGzip(vals []string) bool {
	if len(vals) == 0 {
		return false
	}
	if len(vals) == 1 && vals[0] == "gzip" { // the common case, without parsing
		return true
	}
	gz, star := -1.0, -1.0
	listElements(vals, func(coding, params string) {
		switch {
		case strings.EqualFold(coding, "gzip"), strings.EqualFold(coding, "x-gzip"):
			gz = max(gz, qValue(params))
		case coding == "*":
			star = max(star, qValue(params))
		}
	})
	return gz > 0 || (gz < 0 && star > 0)
}

// requestCoding reads a request's Content-Encoding: gzip reports a gzip
// body; ok is false for any coding other than gzip and identity.
func requestCoding(vals []string) (gzip, ok bool) {
	for _, v := range vals {
		for v != "" {
			var c string
			c, v, _ = strings.Cut(v, ",")
			switch c = strings.TrimSpace(c); {
			case c == "", strings.EqualFold(c, "identity"):
			case strings.EqualFold(c, "gzip"), strings.EqualFold(c, "x-gzip"):
				if gzip { // gzip twice: not worth supporting
					return false, false
				}
				gzip = true
			default:
				return false, false
			}
		}
	}
	return gzip, true
}

// writeGzipBody sends body gzipped, with its compressed Content-Length.
func writeGzipBody(w http.ResponseWriter, code int, ct []string, body []byte) {
	buf := getBuffer()
	defer putBuffer(buf)
	zw := getGzipWriter(buf)
	_, _ = zw.Write(body) // a bytes.Buffer does not fail
	_ = zw.Close()
	putGzipWriter(zw)
	h := w.Header()
	h["Content-Type"] = ct
	h["Content-Encoding"] = hdrGzip
	h["Vary"] = hdrVary
	h["Content-Length"] = []string{strconv.Itoa(buf.Len())}
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// gzipBody is a request body being inflated: at most limit inflated bytes,
// then an *http.MaxBytesError, as http.MaxBytesReader gives for the raw
// body, so the same 413 follows.
type gzipBody struct {
	zr    *gzip.Reader
	left  int64 // inflated bytes still allowed
	limit int64
	err   error
}

// newGzipBody starts inflating r. A body that is not gzip fails on the
// first Read, as a malformed body does.
func newGzipBody(r io.Reader, limit int64) *gzipBody {
	g := &gzipBody{left: limit, limit: limit}
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(r)
	} else {
		err = zr.Reset(r)
	}
	if err != nil {
		g.err = gzipError(err)
		if zr != nil {
			gzipReaders.Put(zr)
		}
		return g
	}
	zr.Multistream(false) // one member; anything after it is trailing data
	g.zr = zr
	return g
}

func (g *gzipBody) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.left <= 0 {
		// One byte more says whether the body goes on past the limit.
		var one [1]byte
		n, err := g.zr.Read(one[:])
		if n > 0 {
			g.err = &http.MaxBytesError{Limit: g.limit}
			return 0, g.err
		}
		g.err = gzipError(err)
		return 0, g.err
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	n, err := g.zr.Read(p)
	g.left -= int64(n)
	if err != nil {
		g.err = gzipError(err)
	}
	return n, g.err
}

// close recycles the inflater.
func (g *gzipBody) close() {
	if g.zr != nil {
		gzipReaders.Put(g.zr)
		g.zr = nil
	}
}

// gzipError keeps read errors (a *http.MaxBytesError from the raw body's
// limit, io.EOF) as they are and names the others as bad gzip.
func gzipError(err error) error {
	switch {
	case err == nil, err == io.EOF:
		return err
	case errors.Is(err, gzip.ErrHeader), errors.Is(err, gzip.ErrChecksum), errors.Is(err, io.ErrUnexpectedEOF):
		return &badGzip{err}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	var ce flate.CorruptInputError
	if errors.As(err, &ce) {
		return &badGzip{err}
	}
	return err
}

// badGzip is a request body that is not valid gzip.
type badGzip struct{ err error }

func (e *badGzip) Error() string { return "malformed gzip body: " + e.err.Error() }
func (e *badGzip) Unwrap() error { return e.err }

// setGzipHeaders marks a data answer as gzip when the client accepts it;
// call it before WriteHeader.
func (rw *respWriter) setGzipHeaders() {
	if rw.gzip {
		h := rw.Header()
		h["Content-Encoding"] = hdrGzip
		h["Vary"] = hdrVary
	}
}
