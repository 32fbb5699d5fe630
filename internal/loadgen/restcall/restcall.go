// Package restcall holds the REST adapters: JSON (protocol "rest") and
// protobuf (protocol "rest-protobuf"), over HTTP/1.1 or HTTP/2
// (call.Options.HTTPVersion), one small Caller per scenario and encoding.
// They share the transport and the status and content-type checks;
// decoding and validation are each adapter's own.
package restcall

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/payload"
)

// MaxBody bounds a response body; a larger one is an invalid response. The
// largest answer the contract allows, api.MaxRecords (100,000) records as
// JSON, is about 25 MB: 64 MiB leaves room for a server that spells its
// numbers differently.
const MaxBody = 64 << 20

// bufferSize is the transport's socket buffer size, grpc-go's default, so
// both protocols read and write in the same chunks.
const bufferSize = 32 << 10

// client is what the JSON and protobuf clients share: the transports
// over counted connections (Transports).
type client struct {
	rts     *roundTrippers
	root    *url.URL
	auth    string
	records int  // call.Options.Records
	gzip    bool // ask for gzip both ways (compress.go)
	// jsonCodec is the codec the server is asked to use (jsoncodec.Header);
	// "" for encoding/json, which a request without the header gets.
	jsonCodec string
	enc       scenarios
	pl        *payload.Payload // call.Options.Payload
	// The stream scenarios' (streams.go): protobuf (rest-protobuf) or JSON
	// messages, the options they need, and their WebSockets.
	proto bool
	so    streamOptions
	ws    *streams
}

// scenarios makes a scenario's adapter for a client: an *encoding.
type scenarios interface {
	caller(c *client, scenario api.Scenario) (call.Caller, error)
}

// open opens a client of encoding enc, as the exported type wrap makes.
func open[C any](o call.Options, enc scenarios, wrap func(*client) *C) (*C, error) {
	c, err := newClient(o)
	if err != nil {
		return nil, err
	}
	c.enc = enc
	return wrap(c), nil
}

// Caller implements call.Client.
func (c *client) Caller(scenario api.Scenario) (call.Caller, error) {
	if scenario.IsStream() {
		return c.streamCaller(c.so, scenario, c.proto) // streams.go
	}
	return c.enc.caller(c, scenario)
}

func newClient(o call.Options) (*client, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	root, err := url.Parse(call.Scheme(o) + "://" + o.Target)
	if err != nil || root.Host == "" {
		return nil, fmt.Errorf("restcall: bad target %q", o.Target)
	}
	c := &client{rts: newRoundTrippers(o), root: root, records: o.Records, gzip: o.Compress == call.CompressGzip, pl: o.Payload,
		so: streamOptions{messages: o.MessagesPer(), feedRate: o.FeedRate, http2: o.IsHTTP2(), sse: o.Settings[SettingFeedTransport] == FeedSSE},
		ws: &streams{http: &http.Client{Transport: &http.Transport{DialContext: o.Dialer.DialContext}}, open: map[*websocket.Conn]bool{}}}
	if o.Token != "" {
		c.auth = "Bearer " + o.Token
	}
	return c, nil
}

// Transport is the HTTP/1.1 transport of every REST client, the contract's
// and a user's own URL's (endpointcall) alike: o's counted connections,
// one per worker unless o names a number, the transport's own compression
// off, grpc-go's buffer sizes, no proxy.
func Transport(o call.Options) *http.Transport {
	conns := o.Connections
	if conns == 0 {
		conns = o.Workers // one connection per worker
	}
	idle := max(conns, o.Workers) // never close a connection a worker will want back
	tr := &http.Transport{
		DialContext:         o.Dialer.DialContext,
		MaxConnsPerHost:     conns,
		MaxIdleConns:        idle,
		MaxIdleConnsPerHost: idle,
		IdleConnTimeout:     90 * time.Second,
		// The transport's own compression off: it would inflate out of
		// sight. --compress gzip asks for it explicitly (compress.go).
		DisableCompression: true,
		ReadBufferSize:     bufferSize,
		WriteBufferSize:    bufferSize,
		// No Proxy: load goes straight to the target.
	}
	return tr
}

// Close implements call.Client.
func (c *client) Close() error {
	c.ws.close()
	c.ws.http.CloseIdleConnections()
	c.rts.close()
	return nil
}

// template builds a caller's request; each call sends a shallow copy with
// its own context (and body).
func (c *client) template(method, path, accept, contentType string) *http.Request {
	u := *c.root
	u.Path = path
	if c.records != 0 && method == http.MethodGet && path != api.PathVersion {
		// The list and stream answers: name the size whenever one was given
		// (1000 included), so every cell of a sweep makes the same request.
		u.RawQuery = url.Values{api.QueryRecords: {strconv.Itoa(c.records)}}.Encode()
	}
	h := http.Header{"Accept": {accept}}
	if contentType != "" {
		h["Content-Type"] = []string{contentType}
	}
	if c.gzip {
		if method == http.MethodGet {
			h["Accept-Encoding"] = []string{"gzip"}
		} else {
			h["Content-Encoding"] = []string{"gzip"}
		}
	}
	if c.auth != "" {
		h["Authorization"] = []string{c.auth}
	}
	if c.jsonCodec != "" {
		h[jsoncodec.Header] = []string{c.jsonCodec}
	}
	return &http.Request{
		Method: method, URL: &u, Host: u.Host, Header: h,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}
}

// do sends req and checks the status and content type. On success the
// caller owns resp.Body. It uses the transport directly: the contract has
// no redirects or cookies for an http.Client to handle.
func (c *client) do(req *http.Request, wantType string) (*http.Response, error) {
	resp, err := c.rts.pick().RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		detail := ErrorDetail(resp)
		resp.Body.Close()
		return nil, call.HTTPStatus(resp.StatusCode, detail)
	}
	if ct := resp.Header.Get("Content-Type"); !isMediaType(ct, wantType) {
		io.CopyN(io.Discard, resp.Body, MaxBody) // keep the connection reusable
		resp.Body.Close()
		return nil, call.Invalid("content type %q, want %q", ct, wantType)
	}
	if err := inflate(resp); err != nil {
		io.CopyN(io.Discard, resp.Body, MaxBody)
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

// isMediaType reports whether a Content-Type names the media type want,
// ignoring parameters (e.g. "; charset=utf-8") and case.
func isMediaType(contentType, want string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), want)
}

// ErrorDetail reads the contract's {"error": "..."} body, if any, and
// drains the rest.
func ErrorDetail(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	io.CopyN(io.Discard, resp.Body, MaxBody)
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		return fmt.Sprintf("status %d: %s", resp.StatusCode, e.Error)
	}
	return fmt.Sprintf("status %d", resp.StatusCode)
}

// ReadBody reads the whole body into buf (reused across a caller's calls)
// and closes it. A read failure is a transport error, kept apart from
// decoding failures, which are invalid responses.
func ReadBody(buf *bytes.Buffer, resp *http.Response) error {
	defer resp.Body.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, MaxBody+1)); err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if buf.Len() > MaxBody {
		return call.Invalid("body larger than %d bytes", MaxBody)
	}
	return nil
}

// trackReader remembers the first read failure other than io.EOF, so a
// streaming decoder's error can be told apart: broken connection
// (transport) or bad content (invalid response).
type trackReader struct {
	r   io.Reader
	err error
}

func (t *trackReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && t.err == nil {
		t.err = err
	}
	return n, err
}

// decodeErr turns a streaming decoder's error into a transport error when
// the connection failed, else an invalid response.
func (t *trackReader) decodeErr(what string, err error) error {
	if t.err != nil {
		return fmt.Errorf("read %s: %w", what, t.err)
	}
	return call.Invalid("decode %s: %v", what, err)
}

// resetReader returns br reset to read r, or a new reader when br is nil:
// a caller's buffer is reused across its calls.
func resetReader(br *bufio.Reader, r io.Reader) *bufio.Reader {
	if br == nil {
		return bufio.NewReaderSize(r, bufferSize)
	}
	br.Reset(r)
	return br
}

// newCaller picks a scenario's adapter from a table of constructors.
func newCaller(scenario api.Scenario, ctors map[api.Scenario]func() (call.Caller, error)) (call.Caller, error) {
	ctor, ok := ctors[scenario]
	if !ok {
		return nil, fmt.Errorf("restcall: unknown scenario %q", scenario)
	}
	a, err := ctor()
	if err != nil {
		return nil, fmt.Errorf("restcall: %w", err)
	}
	return a, nil
}

// want is the answer the client's list and stream calls must get.
func (c *client) want() (*call.Records, error) {
	if c.pl != nil {
		return call.Expect(call.PayloadSize(c.pl, c.records)), nil
	}
	return call.Want(c.records)
}

// payload is the records the client's post calls upload (a copy the caller owns).
func (c *client) payload() ([]data.Landing, error) { return data.LandingsN(call.Size(c.records)) }
