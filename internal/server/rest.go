package server

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
)

// Header values shared by every response (net/http does not modify them).
var (
	hdrJSON     = []string{api.TypeJSON}
	hdrNDJSON   = []string{api.TypeNDJSON}
	hdrProtobuf = []string{api.TypeProtobuf}
	hdrNoSniff  = []string{"nosniff"}
	hdrClose    = []string{"close"}
)

// Allow header values.
const (
	allowGet     = "GET, HEAD, OPTIONS"
	allowGetPost = "GET, HEAD, POST, OPTIONS"
)

// restHandler is the HTTP/1.1 side: routing, auth, encoding negotiation,
// counting, panic recovery and JSON errors, in one handler so that a
// request costs one small allocation on top of its real work.
type restHandler struct {
	s       *Server
	maxBody int64
}

func newRESTHandler(s *Server) *restHandler {
	return &restHandler{s: s, maxBody: s.cfg.MaxBody}
}

// respWriter records what a handler did with the response: enough to count
// errors and to recover from a panic correctly.
type respWriter struct {
	http.ResponseWriter
	status int
	wrote  bool // the header is written
	failed bool // writing the body failed (the client went away, or a timeout)
	p      protocol
	m      method // noMethod unless this is a data call
	gzip   bool   // a data call whose client accepts gzip (compress.go)
}

// WriteHeader records the status and passes it on.
func (w *respWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write records failures and passes the bytes on.
func (w *respWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(b)
	if err != nil {
		w.failed = true
	}
	return n, err
}

// Flush sends what is buffered to the client.
func (w *respWriter) Flush() { _ = w.flush() }

// Unwrap gives http.ResponseController the underlying writer.
func (w *respWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *respWriter) flush() error {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	switch f := w.ResponseWriter.(type) {
	case interface{ FlushError() error }:
		if err := f.FlushError(); err != nil {
			w.failed = true
			return err
		}
	case http.Flusher:
		f.Flush()
	}
	return nil
}

// ServeHTTP routes one request.
func (h *restHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rw := &respWriter{ResponseWriter: w, m: noMethod}
	defer h.finish(rw)
	if len(r.TransferEncoding) > 0 {
		// RFC 9112 §6.3: a request with both Transfer-Encoding and
		// Content-Length (a smuggling attempt, or a broken client) is
		// answered and its connection closed. net/http drops the
		// Content-Length before a handler sees the request, so every
		// chunked request's connection is closed after its answer:
		// chunked uploads are rare, and meteorbench's clients send a
		// length.
		rw.Header()["Connection"] = hdrClose
	}

	var m method
	switch r.URL.Path {
	case api.PathVersion:
		if !methodAllowed(rw, r, allowGet) {
			return
		}
		m = methodGetVersion
	case api.PathList:
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			m = methodGetLargePayloadAsList
		case http.MethodPost:
			m = methodPostLargePayload
		default:
			methodAllowed(rw, r, allowGetPost)
			return
		}
	case api.PathStream:
		if !methodAllowed(rw, r, allowGet) {
			return
		}
		m = methodGetLargePayload
	case api.PathHealth:
		if methodAllowed(rw, r, allowGet) {
			h.healthz(rw)
		}
		return
	case api.PathMetrics:
		if methodAllowed(rw, r, allowGet) {
			h.s.metrics.handler.ServeHTTP(rw, r)
		}
		return
	default:
		writeError(rw, http.StatusNotFound, "no such path: "+r.URL.Path)
		return
	}

	if h.s.token != nil && !restAuthorized(r, h.s.token) {
		rw.Header()["Www-Authenticate"] = []string{`Bearer realm="meteorbench"`}
		writeError(rw, http.StatusUnauthorized, "missing or wrong bearer token")
		return
	}

	accept := acceptPref(r.Header["Accept"])
	rw.gzip = acceptsGzip(r.Header["Accept-Encoding"])
	if m == methodPostLargePayload {
		h.post(w, rw, r, accept)
		return
	}
	rw.p = protoREST
	if accept == prefProto {
		rw.p = protoRESTProtobuf
	}
	h.count(rw, m)
	if m == methodGetVersion {
		if rw.p == protoRESTProtobuf {
			writeProto(rw, h.s.version)
		} else {
			writeJSON(rw, data.Version)
		}
		return
	}
	n := api.DefaultRecords
	if r.URL.RawQuery != "" {
		var err error
		if n, err = queryRecords(r.URL.RawQuery); err != nil {
			writeError(rw, http.StatusBadRequest, err.Error())
			return
		}
	}
	charge := answerCharge(rw.gzip) // restanswer.go
	if m == methodGetLargePayload {
		charge = streamCharge(rw.gzip)
	}
	if !h.admit(rw, r, charge, false) {
		return
	}
	defer h.s.mem.release(charge)
	ls, msgs, err := h.s.records(n)
	if err != nil {
		writeError(rw, http.StatusInternalServerError, "internal server error")
		return
	}
	switch m {
	case methodGetLargePayloadAsList:
		if rw.p == protoRESTProtobuf {
			writeListProto(rw, msgs, h.s.encoders)
		} else {
			writeListJSON(rw, ls, h.s.encoders)
		}
	case methodGetLargePayload:
		if rw.p == protoRESTProtobuf {
			h.streamProto(rw, msgs)
		} else {
			h.streamJSON(rw, ls)
		}
	}
}

// count counts a data call that reached its handler; finish counts its
// error, if it ends in one.
func (h *restHandler) count(rw *respWriter, m method) {
	rw.m = m
	h.s.metrics.requests[rw.p][m].Inc()
	if h.s.panicHook != nil {
		h.s.panicHook()
	}
}

// finish runs after every request: it turns a panic into a 500 JSON error
// (or, once the response has started, into an aborted connection) and
// counts data calls that ended in an error.
func (h *restHandler) finish(rw *respWriter) {
	p := recover()
	if p != nil && p != http.ErrAbortHandler && !rw.wrote {
		writeError(rw, http.StatusInternalServerError, "internal server error")
		p = nil
	}
	if rw.m != noMethod && (p != nil || rw.failed || rw.status >= 400) {
		h.s.metrics.errors[rw.p][rw.m].Inc()
	}
	if p != nil {
		// net/http closes the connection, without logging, so the client
		// sees a truncated response rather than a wrong one.
		panic(http.ErrAbortHandler)
	}
}

func (h *restHandler) healthz(rw *respWriter) {
	select {
	case <-h.s.drainCtx.Done():
		writeJSONStatus(rw, http.StatusServiceUnavailable, healthBody{Status: "draining"})
	default:
		writeJSONStatus(rw, http.StatusOK, healthBody{Status: "ok"})
	}
}

type healthBody struct {
	Status string `json:"status"`
}

// post decodes every record of the body, then answers "SUCCESS". w is the
// unwrapped writer, which http.MaxBytesReader needs to close the connection
// after an oversized body.
func (h *restHandler) post(w http.ResponseWriter, rw *respWriter, r *http.Request, accept pref) {
	ct := mediaType(r.Header.Get("Content-Type"))
	isProto := isProtobufType(ct)
	rw.p = protoREST
	if isProto {
		rw.p = protoRESTProtobuf
	}
	h.count(rw, methodPostLargePayload)
	if !isProto && ct != "" && !strings.EqualFold(ct, api.TypeJSON) {
		writeError(rw, http.StatusUnsupportedMediaType,
			"Content-Type must be "+api.TypeJSON+" or "+api.TypeProtobuf)
		return
	}
	if r.ContentLength > h.maxBody {
		rw.Header()["Connection"] = hdrClose
		writeError(rw, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("request body is %d bytes; the limit is %d", r.ContentLength, h.maxBody))
		return
	}
	gz, known := requestCoding(r.Header["Content-Encoding"])
	if !known {
		writeError(rw, http.StatusUnsupportedMediaType, "Content-Encoding must be gzip or identity")
		return
	}
	if !h.admit(rw, r, callOverhead, true) {
		return
	}
	defer h.s.mem.release(callOverhead)
	bb := &budgetBody{r: http.MaxBytesReader(w, r.Body, h.maxBody), h: h, req: r} // restanswer.go
	defer bb.release()
	var body io.Reader = bb
	length := r.ContentLength
	if gz {
		zb := newGzipBody(body, h.maxBody) // the limit is on the inflated size
		defer zb.close()
		body, length = zb, 0
	}
	var err error
	if isProto {
		err = h.decodeProtoBody(body, length)
	} else {
		_, err = decodeLandingsJSON(body)
	}
	if err != nil {
		if _, ok := errors.AsType[*readError](err); ok {
			msg, timeout := readFailure(err) // echo.go: no addresses
			rw.Header()["Connection"] = hdrClose
			code := http.StatusBadRequest
			if timeout {
				code = http.StatusRequestTimeout
			}
			writeError(rw, code, msg)
			return
		}
		if be, ok := busyRead(err); ok {
			rw.Header()["Connection"] = hdrClose // the rest of the body is unread
			rw.Header()["Retry-After"] = []string{"1"}
			writeError(rw, http.StatusServiceUnavailable, be.Error())
			return
		}
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			if gz { // the raw body may be unread: do not wait for the rest of it
				rw.Header()["Connection"] = hdrClose
			}
			writeError(rw, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("request body is over the %d-byte limit", mbe.Limit))
			return
		}
		writeError(rw, http.StatusBadRequest, err.Error())
		return
	}
	if accept == prefProto || (accept == prefNone && isProto) {
		writeProto(rw, h.s.success)
	} else {
		writeJSON(rw, data.Success)
	}
}

// decodeLandingsJSON decodes a POST body: one JSON array of landings, and
// nothing after it. It returns the reader's error unchanged when reading
// fails (an *http.MaxBytesError, for instance), and a descriptive error for
// anything that is not such an array (truncated, malformed, null, an object,
// wrong types, trailing data).
func decodeLandingsJSON(r io.Reader) ([]data.Landing, error) {
	dec := json.NewDecoder(r)
	var ls []data.Landing
	if err := dec.Decode(&ls); err != nil {
		return nil, jsonError(err)
	}
	if ls == nil {
		return nil, errors.New("malformed JSON: the body must be an array of landings, not null")
	}
	switch _, err := dec.Token(); {
	case err == io.EOF:
		return ls, nil
	case err != nil:
		return nil, jsonError(err)
	default:
		return nil, errors.New("malformed JSON: data after the array")
	}
}

// jsonError describes a decoding error, keeping read errors (such as
// *http.MaxBytesError) reachable with errors.As.
func jsonError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("malformed JSON: truncated body: %w", err)
	}
	return fmt.Errorf("malformed JSON: %w", err)
}

// maxPreGrow bounds what a declared Content-Length reserves before any
// body byte has arrived (the full list is about 100 KB).
const maxPreGrow = 128 << 10

// decodeProtoBody reads a MeteoriteLandingList and converts every record, so
// invalid timestamps are caught as they would be by a real consumer.
func (h *restHandler) decodeProtoBody(body io.Reader, length int64) error {
	buf := getBuffer()
	defer putBuffer(buf)
	// Grow for the declared length only up to a bound: a client that
	// declares 8 MiB and sends 2 bytes must not make the server hold 8 MiB
	// for the whole read timeout. Beyond it, ReadFrom grows as bytes arrive.
	if length > 0 {
		buf.Grow(int(min(length, maxPreGrow)))
	}
	if _, err := buf.ReadFrom(body); err != nil {
		return err
	}
	var list pb.MeteoriteLandingList
	if err := proto.Unmarshal(buf.Bytes(), &list); err != nil {
		return fmt.Errorf("malformed protobuf: %w", err)
	}
	return convertList(&list)
}

// convertList converts every record of a list, failing on the first invalid one.
func convertList(list *pb.MeteoriteLandingList) error {
	for i, m := range list.GetMeteoriteLandings() {
		if _, err := data.FromProto(m); err != nil {
			return fmt.Errorf("invalid record %d: %w", i, err)
		}
	}
	return nil
}

// streamBufferSize is how much of a stream is buffered between writes to
// the connection: grpc-go's default write buffer (32 KiB), so both protocols
// hand the kernel about the same amount at a time.
const streamBufferSize = 32 << 10

// streamWriters recycles the streams' buffers.
var streamWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, streamBufferSize) }}

// streamOut buffers a stream the way a well-written service does: the first
// record is flushed at once, so the client's time to first record is the
// server's real latency, and the rest fill streamBufferSize before each
// write, instead of one write (and one HTTP chunk, one syscall) per record.
// The data are in memory, so nothing waits for a record that has not yet
// been produced; a source that can stall would also need a flush on idle.
type streamOut struct {
	rw    *respWriter
	bw    *bufio.Writer
	zw    *gzip.Writer // records go through it into bw when the answer is gzip
	first bool         // the first record is written and flushed
}

func newStreamOut(rw *respWriter) *streamOut {
	bw := streamWriters.Get().(*bufio.Writer)
	bw.Reset(rw)
	o := &streamOut{rw: rw, bw: bw}
	if rw.gzip {
		o.zw = getGzipWriter(bw)
	}
	return o
}

// Write takes one whole record; after the first, it is only buffered.
func (o *streamOut) Write(b []byte) (int, error) {
	var n int
	var err error
	if o.zw != nil {
		n, err = o.zw.Write(b)
	} else {
		n, err = o.bw.Write(b)
	}
	if err != nil || o.first {
		return n, err
	}
	o.first = true
	return n, o.flush()
}

// flush sends everything buffered, through net/http to the connection.
func (o *streamOut) flush() error {
	if o.zw != nil {
		if err := o.zw.Flush(); err != nil {
			return err
		}
	}
	if err := o.bw.Flush(); err != nil {
		return err
	}
	return o.rw.flush()
}

// close flushes what is left and recycles the buffer.
func (o *streamOut) close() {
	if o.zw != nil {
		_ = o.zw.Close() // the gzip trailer, into bw
		putGzipWriter(o.zw)
		o.zw = nil
	}
	_ = o.flush()
	o.bw.Reset(nil)
	streamWriters.Put(o.bw)
}

// streamJSON writes the records as NDJSON, one record a line.
func (h *restHandler) streamJSON(rw *respWriter, ls []data.Landing) {
	rw.Header()["Content-Type"] = hdrNDJSON
	rw.setGzipHeaders()
	rw.WriteHeader(http.StatusOK)
	out := newStreamOut(rw)
	defer out.close()
	enc := json.NewEncoder(out) // one Write per record, with its newline
	for i := range ls {
		if err := enc.Encode(&ls[i]); err != nil {
			return
		}
	}
}

// streamProto writes the records as varint-length-delimited messages (the
// protodelim format), buffered as streamJSON is.
func (h *restHandler) streamProto(rw *respWriter, msgs []*pb.MeteoriteLanding) {
	rw.Header()["Content-Type"] = hdrProtobuf
	rw.setGzipHeaders()
	rw.WriteHeader(http.StatusOK)
	out := newStreamOut(rw)
	defer out.close()
	scratch := make([]byte, 0, 512)
	for _, m := range msgs {
		scratch = protowire.AppendVarint(scratch[:0], uint64(proto.Size(m)))
		b, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(scratch, m)
		if err != nil {
			rw.failed = true
			return
		}
		scratch = b
		if _, err := out.Write(b); err != nil {
			return
		}
	}
}

// bufPool recycles response and request buffers; buffers that grew very
// large are dropped rather than kept.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBuffer = 4 << 20

func getBuffer() *bytes.Buffer { return bufPool.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledBuffer {
		return
	}
	b.Reset()
	bufPool.Put(b)
}

// writeJSON serialises v and sends it with status 200.
func writeJSON(rw *respWriter, v any) { writeJSONStatus(rw, http.StatusOK, v) }

func writeJSONStatus(rw *respWriter, code int, v any) {
	buf := getBuffer()
	defer putBuffer(buf)
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		writeError(rw, http.StatusInternalServerError, "encoding the response: "+err.Error())
		return
	}
	writeBody(rw, code, hdrJSON, buf.Bytes())
}

// writeProto serialises m (sized, then marshalled into a pooled buffer, as
// grpc-go's codec does) and sends it with status 200.
func writeProto(rw *respWriter, m proto.Message) {
	buf := getBuffer()
	defer putBuffer(buf)
	buf.Grow(proto.Size(m))
	b, err := proto.MarshalOptions{}.MarshalAppend(buf.AvailableBuffer(), m)
	if err != nil {
		writeError(rw, http.StatusInternalServerError, "encoding the response: "+err.Error())
		return
	}
	writeBody(rw, http.StatusOK, hdrProtobuf, b)
}

func writeBody(w http.ResponseWriter, code int, ct []string, body []byte) {
	if rw, ok := w.(*respWriter); ok && rw.gzip && code == http.StatusOK {
		writeGzipBody(w, code, ct, body)
		return
	}
	h := w.Header()
	h["Content-Type"] = ct
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// errorBody is the JSON shape of every REST error.
type errorBody struct {
	Error string `json:"error"`
}

// writeError sends {"error": msg} with the given status. (http.Error would
// force text/plain.)
func writeError(w http.ResponseWriter, code int, msg string) {
	b, err := json.Marshal(errorBody{Error: boundEcho(msg)}) // echo.go
	if err != nil {                                          // cannot happen for a struct of one string
		b = []byte(`{"error":"internal server error"}`)
	}
	h := w.Header()
	h["Content-Type"] = hdrJSON
	h["X-Content-Type-Options"] = hdrNoSniff
	delete(h, "Content-Length")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// methodAllowed answers OPTIONS (204) and wrong methods (405), with an
// Allow header, and reports whether the request should go on.
func methodAllowed(w http.ResponseWriter, r *http.Request, allow string) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodOptions:
		w.Header()["Allow"] = []string{allow}
		w.WriteHeader(http.StatusNoContent)
		return false
	}
	w.Header()["Allow"] = []string{allow}
	writeError(w, http.StatusMethodNotAllowed,
		fmt.Sprintf("method %s not allowed on %s; allowed: %s", r.Method, r.URL.Path, allow))
	return false
}

// restAuthorized checks "Authorization: Bearer <token>" in constant time.
func restAuthorized(r *http.Request, token []byte) bool {
	return bearerMatches(r.Header.Get("Authorization"), token)
}

// bearerMatches reports whether v is "Bearer <token>" (the scheme is case
// insensitive), comparing the token in constant time.
func bearerMatches(v string, token []byte) bool {
	const scheme = "Bearer "
	if len(v) < len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(v[len(scheme):])), token) == 1
}

// pref is the response encoding a client asked for.
type pref uint8

const (
	prefNone  pref = iota // no preference stated (no Accept, or only wildcards)
	prefJSON              // JSON (or NDJSON) preferred
	prefProto             // protobuf preferred
)

// acceptPref reads the Accept header: protobuf when application/x-protobuf
// is listed with a q above that of any listed JSON type; JSON when a JSON type
// is listed (or protobuf is refused with q=0); no preference otherwise.
func acceptPref(vals []string) pref {
	if len(vals) == 0 {
		return prefNone
	}
	if len(vals) == 1 { // the common cases, without parsing
		switch vals[0] {
		case api.TypeProtobuf:
			return prefProto
		case api.TypeJSON, api.TypeNDJSON:
			return prefJSON
		case "*/*", "":
			return prefNone
		}
	}
	qp, qj := -1.0, -1.0
	listElements(vals, func(mt, params string) {
		switch {
		case isProtobufType(mt):
			qp = max(qp, qValue(params))
		case strings.EqualFold(mt, api.TypeJSON) || strings.EqualFold(mt, api.TypeNDJSON):
			qj = max(qj, qValue(params))
		}
	})
	switch {
	case qp > 0 && qp > qj:
		return prefProto
	case qj > 0 || qp == 0:
		return prefJSON
	}
	return prefNone
}

// listElements calls f with each element of a comma-separated header's
// values (Accept, Accept-Encoding): its media range or coding, trimmed of
// white space, and its parameters (what follows the first ';').
func listElements(vals []string, f func(elem, params string)) {
	for _, v := range vals {
		for v != "" {
			var part string
			part, v, _ = strings.Cut(v, ",")
			elem, params, _ := strings.Cut(part, ";")
			f(strings.TrimSpace(elem), params)
		}
	}
}

// qValue finds q=... among a media range's parameters; 1 when absent or
// unreadable.
func qValue(params string) float64 {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || q < 0 || q > 1 {
				return 1
			}
			return q
		}
	}
	return 1
}

// mediaType strips parameters and spaces from a Content-Type value.
func mediaType(v string) string {
	mt, _, _ := strings.Cut(v, ";")
	return strings.TrimSpace(mt)
}

func isProtobufType(mt string) bool {
	return strings.EqualFold(mt, api.TypeProtobuf) || strings.EqualFold(mt, "application/protobuf")
}
