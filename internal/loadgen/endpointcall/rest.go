package endpointcall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/restcall"
	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/results"
)

// REST is a user's REST endpoint: what every call sends, and the message
// whose JSON mapping its answers decode into (Answer; nil: none known).
type REST struct {
	URL    *url.URL
	Method string
	Body   []byte // nil: no body
	Header http.Header
	// Answer is the compiled type of the pair's gRPC output, set before
	// the run: the answers decode into its JSON mapping's typed values,
	// unless the first answer shows they are not of it (generic then).
	Answer *payload.Compiled
	// NoSchema says why Answer is nil, for the warning.
	NoSchema string

	mu       sync.Mutex
	settled  atomic.Bool // the first answer has decided typed or generic
	generic  atomic.Bool
	whyNotTy string
	// typed is the type the answers decode into, once settled: Answer,
	// or one of Answer.Others() when the answers write 64-bit integers as
	// strings or the fields under their .proto names.
	typed atomic.Pointer[payload.Compiled]
}

// Name is "GET http://127.0.0.1:8080/items".
func (r *REST) Name() string { return r.Method + " " + r.URL.String() }

// Decoding is how the answers decode: typed, while the answers fit the
// schema's message, else generic.
func (r *REST) Decoding() results.Decoding {
	if r.Answer == nil || r.generic.Load() {
		return results.DecodeGenericJSON
	}
	return results.DecodeTypedJSON
}

// GenericWhy says why the answers decode generically ("" when typed).
func (r *REST) GenericWhy() string {
	if r.Answer == nil {
		return r.NoSchema
	}
	if !r.generic.Load() {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.whyNotTy
}

// settle decides, on the first answer, whether the answers are the JSON
// mapping of Answer: decoded strictly (no member the message lacks), as
// protojson reads them; the run's codec decodes the later ones. Racing
// callers may settle together: the same answer settles the same way.
func (r *REST) settle(body []byte) {
	if r.settled.Load() {
		return
	}
	why := ""
	typed := r.Answer
	v, ok := r.Answer.JSONTarget(firstByte(body))
	if !ok {
		why = fmt.Sprintf("the answer (%s) is not the JSON of a %s", payload.JSONKind(firstByte(body)), r.Answer.Name())
	} else if err := decodeStrict(body, v); err != nil {
		why = fmt.Sprintf("the answer is not the JSON of a %s: %v", r.Answer.Name(), err)
		// 64-bit integers written as strings ("123"), or the fields
		// under their .proto names, as the protobuf JSON mapping allows:
		// the same message, read so.
		for _, o := range r.Answer.Others() {
			if v, _ := o.JSONTarget(firstByte(body)); decodeStrict(body, v) == nil {
				why, typed = "", o
				break
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.settled.Load() {
		return
	}
	if why != "" {
		r.whyNotTy = why
		r.generic.Store(true)
	}
	r.typed.Store(typed)
	r.settled.Store(true)
}

// decodeStrict decodes a JSON answer into v with no member v lacks, as
// protojson reads a message.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// firstByte is the first byte of a JSON text that is not white space.
func firstByte(b []byte) byte {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
	}
	return 0
}

// ParseREST reads run's --rest-url, --rest-method, --rest-body and
// --header values. The method defaults to GET, or POST with a body; a
// header is "Key: value".
func ParseREST(rawURL, method, bodyFile string, headers []string) (*REST, error) {
	return RESTSpec{URL: rawURL, Method: method, Body: bodyFile, Headers: headers}.Parse()
}

// RESTSpec is what run's flags, or a pair of an endpoints file, say of a
// REST endpoint.
type RESTSpec struct {
	URL, Method, Body string   // Body: a file
	Headers           []string // "Key: value"
	// At names where each of "url", "body" and "header" was given, for
	// the errors; nil: run's flags.
	At func(field string) string
}

func (s RESTSpec) at(field string) string {
	if s.At != nil {
		return s.At(field)
	}
	return map[string]string{"url": "--rest-url", "body": "--rest-body", "header": "--header"}[field]
}

// Parse checks the spec and reads the body file.
func (s RESTSpec) Parse() (*REST, error) {
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s %q: want http://HOST[:PORT]/PATH or https://...", s.at("url"), s.URL)
	}
	if u.Port() == "" {
		u.Host += map[string]string{"http": ":80", "https": ":443"}[u.Scheme]
	}
	r := &REST{URL: u, Method: strings.ToUpper(s.Method), Header: http.Header{}}
	if s.Body != "" {
		if r.Body, err = os.ReadFile(s.Body); err != nil {
			return nil, fmt.Errorf("%s: %w", s.at("body"), err)
		}
		if r.Method == "" {
			r.Method = http.MethodPost
		}
	}
	if r.Method == "" {
		r.Method = http.MethodGet
	}
	for _, h := range s.Headers {
		k, v, err := ParseHeader(h)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", s.at("header"), h, err)
		}
		r.Header.Add(k, v)
	}
	if r.Body != nil && r.Header.Get("Content-Type") == "" {
		r.Header.Set("Content-Type", api.TypeJSON)
	}
	if r.Header.Get("Accept") == "" {
		r.Header.Set("Accept", api.TypeJSON)
	}
	return r, nil
}

// ParseHeader reads a header, "Key: value".
func ParseHeader(h string) (key, value string, err error) {
	k, v, ok := strings.Cut(h, ":")
	if k = strings.TrimSpace(k); !ok || k == "" || strings.ContainsAny(k, " \t") {
		return "", "", errors.New("want 'Key: value'")
	}
	return k, strings.TrimSpace(v), nil
}

// Metadata is the gRPC metadata of headers ("Key: value"): every header
// but those HTTP/2 or gRPC own (Content-Type, Accept, Content-Length,
// Host, Connection, TE, User-Agent and grpc-*), its key in lower case.
func Metadata(headers []string) (metadata.MD, error) {
	md := metadata.MD{}
	for _, h := range headers {
		k, v, err := ParseHeader(h)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", h, err)
		}
		if k = strings.ToLower(k); !transportHeader(k) {
			md.Append(k, v)
		}
	}
	if len(md) == 0 {
		return nil, nil
	}
	return md, nil
}

// transportHeader reports whether a header is the transport's own, never
// gRPC metadata.
func transportHeader(k string) bool {
	switch k {
	case "content-type", "accept", "content-length", "host", "connection", "te", "user-agent", "transfer-encoding":
		return true
	}
	return strings.HasPrefix(k, "grpc-") || strings.HasPrefix(k, ":")
}

// restClient calls the pairs' REST endpoints over the contract's HTTP/1.1
// transport (one, for every host: pairs at one address share its
// connections).
type restClient struct {
	tr    *http.Transport
	e     *Endpoints
	token string
	codec *jsoncodec.Codec
}

func newRESTClient(e *Endpoints, o call.Options) (*restClient, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	codec, err := jsoncodec.Get(o.JSONCodec)
	if err != nil {
		return nil, err
	}
	tr := restcall.Transport(o)
	if o.Dialer.TLS != nil {
		tr.DialTLSContext = o.Dialer.DialContext // the counted dialer makes the TLS connection (https URLs)
	}
	return &restClient{tr: tr, e: e, token: o.Token, codec: codec}, nil
}

// Caller implements call.Client: a caller of pair sc's request (the one
// pair's, for a single pair).
func (c *restClient) Caller(sc api.Scenario) (call.Caller, error) {
	p := c.e.called(sc)
	if p == nil || p.REST == nil {
		return nil, fmt.Errorf("endpointcall: no REST request for %s", sc)
	}
	ep := p.REST
	h := ep.Header.Clone()
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	u := *ep.URL
	req := &http.Request{Method: ep.Method, URL: &u, Host: u.Host, Header: h, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	return &restCaller{c: c, ep: ep, req: req}, nil
}

// Close implements call.Client.
func (c *restClient) Close() error {
	c.tr.CloseIdleConnections()
	return nil
}

// restCaller makes the endpoint's call: the answer must be 2xx and decode
// as JSON, timed, with the run's JSON codec: into the typed values of the
// schema's message, or generic values without one.
type restCaller struct {
	c   *restClient
	ep  *REST
	req *http.Request // the template every call copies
	buf bytes.Buffer
}

func (a *restCaller) Call(ctx context.Context) (call.Outcome, error) {
	timer := call.StartTimer()
	req := a.req.WithContext(ctx)
	if body := a.ep.Body; body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
	}
	resp, err := a.c.tr.RoundTrip(req)
	if err != nil {
		return call.Outcome{}, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		detail := restcall.ErrorDetail(resp)
		resp.Body.Close()
		return call.Outcome{}, call.HTTPStatus(resp.StatusCode, detail)
	}
	if err := restcall.ReadBody(&a.buf, resp); err != nil {
		return call.Outcome{}, err
	}
	timer.Received()
	body := a.buf.Bytes()
	if a.ep.Answer != nil {
		a.ep.settle(body) // once, untimed
	}
	t0 := time.Now()
	if a.ep.Decoding() == results.DecodeTypedJSON {
		v, ok := a.ep.typed.Load().JSONTarget(firstByte(body))
		if ok {
			err = a.c.codec.Unmarshal(body, v)
		}
		timer.Decoded(t0)
		if !ok || err != nil {
			if !ok {
				err = fmt.Errorf("%s", payload.JSONKind(firstByte(body)))
			}
			return call.Outcome{}, call.Invalid("answer is not the JSON of a %s: %v", a.ep.Answer.Name(), err)
		}
		return timer.Outcome(), nil
	}
	var v any
	err = a.c.codec.Unmarshal(body, &v)
	timer.Decoded(t0)
	if err != nil {
		if len(body) == 0 {
			err = errors.New("empty body")
		}
		return call.Outcome{}, call.Invalid("answer is not JSON: %v", err)
	}
	return timer.Outcome(), nil
}
