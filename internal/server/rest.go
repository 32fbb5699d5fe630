package server

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
)

// Header values shared by every response (net/http does not modify them).
var (
	hdrJSON     = []string{api.TypeJSON}
	hdrNDJSON   = []string{api.TypeNDJSON}
	hdrProtobuf = []string{api.TypeProtobuf}
	hdrNoSniff  = []string{"nosniff"}
	hdrClose    = []string{"close"}
)

// restPaths is what a 404 lists: the REST routes and their methods, so a
// person trying the server with curl finds them.
const restPaths = "GET " + api.PathVersion + ", GET|POST " + api.PathList + ", GET " + api.PathStream +
	", POST " + api.PathUpload + ", GET " + api.PathChat + " (WebSocket), GET " + api.PathFeed + " (WebSocket, SSE)" +
	", GET " + api.PathHealth + ", GET " + api.PathMetrics

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
	// codec is the JSON codec the call asked for (jsoncodec.Header); nil
	// for encoding/json, what every request without the header gets.
	codec *jsoncodec.Codec
}

// json is the codec of the call's JSON: the one asked for, or encoding/json.
func (w *respWriter) json() *jsoncodec.Codec {
	if w.codec == nil {
		return jsoncodec.Default()
	}
	return w.codec
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
	h.s.mem.begin() // membudget.go: no relief while calls come
	defer h.s.mem.end()
	if r.ProtoMajor == 2 && routeFor(r.Header.Get("Content-Type")) == routeGRPC && !h.s.connect.serves(r.URL.Path) {
		h.s.serveGRPC(w, r) // h2route.go: gRPC on a connection net/http serves
		return
	}
	if h.s.connect != nil && strings.HasPrefix(r.URL.Path, api.PathRPCPrefix) {
		h.s.connect.ServeHTTP(w, r) // connect.go: gRPC-Web and Connect
		return
	}
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
		closeAfter(rw, r)
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
	case api.PathUpload, api.PathChat, api.PathFeed:
		h.serveStream(rw, r) // streamrest.go
		return
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
		if h.s.pprof != nil && strings.HasPrefix(r.URL.Path, PprofPrefix) {
			h.s.pprof.ServeHTTP(rw, r) // pprof.go
			return
		}
		writeError(rw, http.StatusNotFound, "no such path: "+r.URL.Path+" (the paths: "+restPaths+")")
		return
	}

	if h.s.token != nil && !restAuthorized(r, h.s.token) {
		rw.Header()["Www-Authenticate"] = []string{`Bearer realm="meteorbench"`}
		writeError(rw, http.StatusUnauthorized, "missing or wrong bearer token")
		return
	}

	if v := r.Header[jsoncodec.Header]; len(v) > 0 {
		jc, err := jsoncodec.Get(v[0])
		if err != nil {
			writeError(rw, http.StatusBadRequest, err.Error())
			return
		}
		rw.codec = jc
	}
	if h.s.payload != nil {
		rw.Header()[api.HeaderPayload] = h.s.payloadHdr
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
	if h.s.payload != nil {
		n = h.s.payload.Len()
	}
	if r.URL.RawQuery != "" {
		var err error
		if n, err = queryRecordsOr(r.URL.RawQuery, n); err != nil {
			writeError(rw, http.StatusBadRequest, err.Error())
			return
		}
	}
	charge := answerCharge(rw.gzip) // restanswer.go
	if m == methodGetLargePayload {
		charge = streamCharge(rw.gzip)
	}
	release, ok := h.admit(rw, r, charge, false)
	if !ok {
		return
	}
	defer release()
	if h.s.payload != nil {
		h.servePayload(rw, m, n) // payload.go
		return
	}
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
	if rw.p == protoREST {
		h.s.metrics.jsonCodec[rw.json().Index()].Inc()
	}
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
	if h.s.payload != nil { // for the load generator's check, uncounted
		rw.Header()[api.HeaderPayload] = h.s.payloadHdr
	}
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
	if err := rw.json().Encode(buf, v); err != nil {
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
