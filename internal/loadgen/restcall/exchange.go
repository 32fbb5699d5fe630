package restcall

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// Exchange is one scenario's call as the standard REST caller makes it,
// taken apart for the lean engine (internal/loadgen/lean): the request
// serialised once, byte for byte what net/http writes for it, and the
// check of a whole answer body, decoded and validated by the same code as
// the standard caller's.
type Exchange struct {
	// Request is the request as written on the wire, headers and body.
	// A post's body is marshalled once, here.
	Request []byte
	// Method, Path (with its query), Header and Body are the same request
	// taken apart, for a client that writes it another way (the lean
	// engine's HTTP/2). Header holds the fields the caller sets (not Host,
	// User-Agent or Content-Length).
	Method, Path string
	Header       http.Header
	Body         []byte
	// Accept is the media type the answer must have (Content-Type).
	Accept string
	// Check decodes a whole answer body (de-chunked) and validates it;
	// its errors are call.Error of class call.ClassInvalid. It keeps
	// scratch state: one Exchange per caller, not shared.
	Check func(body []byte) error
}

// exchanger is an adapter that can give its call as an Exchange.
type exchanger interface {
	exchange() (*Exchange, error)
}

// NewExchange is scenario's call of the client protocol opens (api.REST or
// api.RESTProtobuf) under o, as an Exchange. It opens no connection.
func NewExchange(o call.Options, protocol api.Protocol, scenario api.Scenario) (*Exchange, error) {
	var c call.Client
	var err error
	switch protocol {
	case api.REST:
		c, err = NewJSON(o)
	case api.RESTProtobuf:
		c, err = NewProtobuf(o)
	default:
		return nil, fmt.Errorf("restcall: %q is not an HTTP/1.1 protocol", protocol)
	}
	if err != nil {
		return nil, err
	}
	defer c.Close()
	a, err := c.Caller(scenario)
	if err != nil {
		return nil, err
	}
	return a.(exchanger).exchange()
}

// exchange implements exchanger: a post's body marshalled once.
func (a *unary[T]) exchange() (*Exchange, error) {
	req := a.req.Clone(a.req.Context())
	var body []byte
	if a.body != nil {
		var err error
		if body, err = a.body(); err != nil {
			return nil, fmt.Errorf("restcall: %w", err)
		}
		if a.c.gzip {
			return nil, fmt.Errorf("restcall: a serialised request is never gzipped")
		}
		req.Body = nopCloser{bytes.NewReader(body)}
		req.ContentLength = int64(len(body))
	}
	raw, err := serialise(req)
	check := func(b []byte) error { return a.checkBody(nil, b) }
	return &Exchange{Request: raw, Accept: a.accept, Check: check,
		Method: req.Method, Path: req.URL.RequestURI(), Header: req.Header, Body: body}, err
}

// exchange implements exchanger.
func (a *jsonStream) exchange() (*Exchange, error) {
	return streamExchange(&a.streamed, api.TypeNDJSON, a.records)
}

// exchange implements exchanger.
func (a *pbStream) exchange() (*Exchange, error) {
	return streamExchange(&a.streamed, api.TypeProtobuf, a.records)
}

// streamExchange is a stream adapter's Exchange: its records read from the
// whole body.
func streamExchange(a *streamed, accept string, records func(*call.Timer, *trackReader) error) (*Exchange, error) {
	raw, err := serialise(a.req)
	var rd bytes.Reader
	check := func(b []byte) error {
		rd.Reset(b)
		body := &trackReader{r: &rd}
		if a.br == nil {
			a.br = bufio.NewReaderSize(body, bufferSize)
		} else {
			a.br.Reset(body)
		}
		return records(nil, body)
	}
	return &Exchange{Request: raw, Accept: accept, Check: check,
		Method: a.req.Method, Path: a.req.URL.RequestURI(), Header: a.req.Header}, err
}

// nopCloser is io.NopCloser with a type Request.Write does not unwrap.
type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// serialise writes req as net/http's transport does (Request.Write: the
// same header order, User-Agent, Content-Length).
func serialise(req *http.Request) ([]byte, error) {
	var b bytes.Buffer
	if err := req.Write(&b); err != nil {
		return nil, fmt.Errorf("restcall: %w", err)
	}
	return b.Bytes(), nil
}
