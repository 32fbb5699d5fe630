package restcall

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// encoding is what the JSON and protobuf clients do differently: the media
// types they ask for and send, how they marshal and unmarshal, and what the
// decoded answers are: V of the small scenario, L of the large one, S of the
// post. The table of scenarios, their requests and their adapters (caller)
// is one for both.
type encoding[V, L, S any] struct {
	accept     string // of the small, large and post answers, and of the post body
	streamType string // of the stream answer

	unmarshal func([]byte, any) error
	marshal   func(any) ([]byte, error)
	version   func(*V) string               // the small answer's version
	records   func(*call.Records, *L) error // checks the large answer
	status    func(*S) string               // the post answer's status
	body      func(c *client) (any, error)  // what a post marshals, made once
	stream    func(c *client, req *http.Request, want *call.Records) call.Caller
}

// caller is the scenario's adapter in encoding e.
func (e *encoding[V, L, S]) caller(c *client, scenario api.Scenario) (call.Caller, error) {
	return newCaller(scenario, map[api.Scenario]func() (call.Caller, error){
		// GET /api/MeteoriteLandings -> the version.
		api.Small: func() (call.Caller, error) {
			return &unary[V]{c: c, req: c.template(http.MethodGet, api.PathVersion, e.accept, ""), accept: e.accept,
				what: "version", decode: decodeWith[V](e.unmarshal),
				check: func(v *V) error { return call.CheckString(e.version(v), data.Version) }}, nil
		},
		// GET .../LargePayload -> the records (1000 unless named) in one answer.
		api.Large: func() (call.Caller, error) {
			want, err := c.want()
			return &unary[L]{c: c, req: c.template(http.MethodGet, api.PathList, e.accept, ""), accept: e.accept,
				what: "records", decode: decodeWith[L](e.unmarshal),
				check: func(l *L) error { return e.records(want, l) }}, err
		},
		// GET .../LargePayload/stream -> the records one at a time.
		api.Stream: func() (call.Caller, error) {
			want, err := c.want()
			return e.stream(c, c.template(http.MethodGet, api.PathStream, e.streamType, ""), want), err
		},
		// POST .../LargePayload with the records (1000 unless named),
		// marshalled per call as a real client would -> the status.
		api.Post: func() (call.Caller, error) {
			body, err := e.body(c)
			return &unary[S]{c: c, req: c.template(http.MethodPost, api.PathList, e.accept, e.accept), accept: e.accept,
				what: "status", decode: decodeWith[S](e.unmarshal),
				body:  func() ([]byte, error) { return e.marshal(body) },
				check: func(st *S) error { return call.CheckString(e.status(st), data.Success) }}, err
		},
	})
}

// decodeWith is unmarshal for a *T.
func decodeWith[T any](unmarshal func([]byte, any) error) func([]byte, *T) error {
	return func(b []byte, v *T) error { return unmarshal(b, v) }
}

// unary is the adapter of a call whose answer is read whole, then decoded
// into a fresh T (timed) and checked: small, large and post, in either
// encoding. A post marshals its body per call, as a real client would.
type unary[T any] struct {
	c      *client
	req    *http.Request
	accept string                 // the answer's media type
	body   func() ([]byte, error) // the request body; nil for a GET
	what   string                 // what the answer is, for a decode error
	decode func([]byte, *T) error // the answer's bytes into v
	check  func(*T) error         // the decoded answer against what it must be
	buf    bytes.Buffer
	gz     bodyGzipper
}

func (a *unary[T]) Call(ctx context.Context) (call.Outcome, error) {
	timer := call.StartTimer()
	req := a.req.WithContext(ctx)
	if a.body != nil {
		body, err := a.body()
		if err != nil {
			return call.Outcome{}, err
		}
		if a.c.gzip {
			body = a.gz.compress(body)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
	}
	resp, err := a.c.do(req, a.accept)
	if err != nil {
		return call.Outcome{}, err
	}
	if err := ReadBody(&a.buf, resp); err != nil {
		return call.Outcome{}, err
	}
	timer.Received()
	err = a.checkBody(&timer, a.buf.Bytes())
	return timer.Outcome(), err
}

// checkBody decodes a whole answer into a fresh T (timed, when timer is
// not nil) and checks it.
func (a *unary[T]) checkBody(timer *call.Timer, b []byte) error {
	t0 := time.Now()
	var v T
	err := a.decode(b, &v)
	if timer != nil {
		timer.Decoded(t0)
	}
	if err != nil {
		return call.Invalid("decode %s: %v", a.what, err)
	}
	return a.check(&v)
}

// recorder decodes one streamed record into a fresh T (timed on its own:
// reading its bytes is not decoding; not timed when timer is nil) and
// checks it is the n-th one wanted.
func recorder[T any](decode func([]byte, *T) error, check func(n int, v *T) error) func(*call.Timer, int, []byte) error {
	return func(timer *call.Timer, n int, b []byte) error {
		t0 := time.Now()
		v := new(T)
		err := decode(b, v)
		if timer != nil {
			timer.Decoded(t0)
		}
		if err != nil {
			return call.Invalid("decode record: %v", err)
		}
		if timer != nil {
			timer.Record()
		}
		return check(n, v)
	}
}

// streamed is what the two stream adapters share: the request, the records
// wanted and the reader over the answer, one frame (line or message) at a
// time.
type streamed struct {
	c    *client
	req  *http.Request
	want *call.Records
	// record decodes and checks the n-th record (recorder).
	record func(timer *call.Timer, n int, b []byte) error
	br     *bufio.Reader
}

// open sends the request, asking for accept, and readies a.br over the
// answer's body (tracked, for a decode error that is the transport's).
func (a *streamed) open(ctx context.Context, accept string) (*http.Response, *trackReader, error) {
	resp, err := a.c.do(a.req.WithContext(ctx), accept)
	if err != nil {
		return nil, nil, err
	}
	body := &trackReader{r: resp.Body}
	a.br = resetReader(a.br, body)
	return resp, body, nil
}

// call is a stream adapter's Call: open the answer, asking for accept, and
// read its records with records, timed.
func (a *streamed) call(ctx context.Context, accept string, records func(*call.Timer, *trackReader) error) (call.Outcome, error) {
	timer := call.StartTimer()
	resp, body, err := a.open(ctx, accept)
	if err != nil {
		return call.Outcome{}, err
	}
	defer resp.Body.Close()
	if err := records(&timer, body); err != nil {
		return call.Outcome{}, err
	}
	return timer.Outcome(), nil
}
