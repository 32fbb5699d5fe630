package restcall

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// JSON is the "rest" client: JSON over HTTP/1.1, decoded with encoding/json
// into data.Landing.
type JSON struct{ *client }

// NewJSON opens a JSON-over-HTTP/1.1 client.
func NewJSON(o call.Options) (*JSON, error) {
	c, err := newClient(o)
	if err != nil {
		return nil, err
	}
	return &JSON{c}, nil
}

// Caller implements call.Client.
func (c *JSON) Caller(scenario api.Scenario) (call.Caller, error) {
	return newCaller(scenario, map[api.Scenario]func() (call.Caller, error){
		api.Small: func() (call.Caller, error) {
			return &jsonSmall{c: c.client, req: c.template(http.MethodGet, api.PathVersion, api.TypeJSON, "")}, nil
		},
		api.Large: func() (call.Caller, error) {
			want, err := c.want()
			return &jsonLarge{c: c.client, req: c.template(http.MethodGet, api.PathList, api.TypeJSON, ""), want: want}, err
		},
		api.Stream: func() (call.Caller, error) {
			want, err := c.want()
			return &jsonStream{c: c.client, req: c.template(http.MethodGet, api.PathStream, api.TypeNDJSON, ""), want: want}, err
		},
		api.Post: func() (call.Caller, error) {
			ls, err := c.payload()
			return &jsonPost{c: c.client, req: c.template(http.MethodPost, api.PathList, api.TypeJSON, api.TypeJSON), landings: ls}, err
		},
	})
}

// jsonSmall: GET /api/MeteoriteLandings -> "API Version 1.0".
type jsonSmall struct {
	c   *client
	req *http.Request
	buf bytes.Buffer
}

func (a *jsonSmall) Call(ctx context.Context) (call.Outcome, error) {
	timer := call.StartTimer()
	resp, err := a.c.do(a.req.WithContext(ctx), api.TypeJSON)
	if err != nil {
		return call.Outcome{}, err
	}
	if err := readBody(&a.buf, resp); err != nil {
		return call.Outcome{}, err
	}
	timer.Received()
	t0 := time.Now()
	var v string
	err = json.Unmarshal(a.buf.Bytes(), &v)
	timer.Decoded(t0)
	if err != nil {
		return call.Outcome{}, call.Invalid("decode version: %v", err)
	}
	return timer.Outcome(), call.CheckString(v, data.Version)
}

// jsonLarge: GET .../LargePayload -> the records (1000 unless named) as one JSON array.
type jsonLarge struct {
	c    *client
	req  *http.Request
	want *call.Records
	buf  bytes.Buffer
}

func (a *jsonLarge) Call(ctx context.Context) (call.Outcome, error) {
	timer := call.StartTimer()
	resp, err := a.c.do(a.req.WithContext(ctx), api.TypeJSON)
	if err != nil {
		return call.Outcome{}, err
	}
	if err := readBody(&a.buf, resp); err != nil {
		return call.Outcome{}, err
	}
	timer.Received()
	t0 := time.Now()
	var ls []data.Landing
	err = json.Unmarshal(a.buf.Bytes(), &ls)
	timer.Decoded(t0)
	if err != nil {
		return call.Outcome{}, call.Invalid("decode records: %v", err)
	}
	return timer.Outcome(), checkLandings(a.want, ls)
}

// jsonStream: GET .../LargePayload/stream -> NDJSON, one record a line,
// each line decoded as it arrives (and timed on its own: reading the line
// is not decoding).
type jsonStream struct {
	c    *client
	req  *http.Request
	want *call.Records
	br   *bufio.Reader
	line []byte // scratch for a line longer than br's buffer
}

func (a *jsonStream) Call(ctx context.Context) (call.Outcome, error) {
	timer := call.StartTimer()
	resp, err := a.c.do(a.req.WithContext(ctx), api.TypeNDJSON)
	if err != nil {
		return call.Outcome{}, err
	}
	defer resp.Body.Close()
	body := &trackReader{r: resp.Body}
	a.br = resetReader(a.br, body)
	n := 0
	for {
		line, rerr := a.readLine()
		var ce *call.Error
		switch {
		case rerr == nil, rerr == io.EOF:
		case errors.As(rerr, &ce):
			return call.Outcome{}, rerr
		default:
			return call.Outcome{}, body.decodeErr("stream", rerr)
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			t0 := time.Now()
			var l data.Landing
			err := json.Unmarshal(line, &l)
			timer.Decoded(t0)
			if err != nil {
				return call.Outcome{}, call.Invalid("decode record: %v", err)
			}
			timer.Record()
			if err := a.want.CheckID(n, l.ID); err != nil {
				return call.Outcome{}, err
			}
			n++
		}
		if rerr == io.EOF {
			break
		}
	}
	return timer.Outcome(), a.want.CheckCount(n)
}

// readLine returns the next line (valid until the next read), or the last
// bytes with io.EOF. A line is at most MaxBody bytes.
func (a *jsonStream) readLine() ([]byte, error) {
	line, err := a.br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return line, err
	}
	a.line = append(a.line[:0], line...)
	for err == bufio.ErrBufferFull {
		if len(a.line) > MaxBody {
			return nil, call.Invalid("line longer than %d bytes", MaxBody)
		}
		line, err = a.br.ReadSlice('\n')
		a.line = append(a.line, line...)
	}
	return a.line, err
}

// jsonPost: POST .../LargePayload with the records (1000 unless named), serialised per
// call as a real client would -> "SUCCESS".
type jsonPost struct {
	c        *client
	req      *http.Request
	landings []data.Landing
	buf      bytes.Buffer
	gz       bodyGzipper
}

func (a *jsonPost) Call(ctx context.Context) (call.Outcome, error) {
	timer := call.StartTimer()
	body, err := json.Marshal(a.landings)
	if err != nil {
		return call.Outcome{}, err
	}
	if a.c.gzip {
		body = a.gz.compress(body)
	}
	req := a.req.WithContext(ctx)
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	resp, err := a.c.do(req, api.TypeJSON)
	if err != nil {
		return call.Outcome{}, err
	}
	if err := readBody(&a.buf, resp); err != nil {
		return call.Outcome{}, err
	}
	timer.Received()
	t0 := time.Now()
	var v string
	err = json.Unmarshal(a.buf.Bytes(), &v)
	timer.Decoded(t0)
	if err != nil {
		return call.Outcome{}, call.Invalid("decode status: %v", err)
	}
	return timer.Outcome(), call.CheckString(v, data.Success)
}

func checkLandings(want *call.Records, ls []data.Landing) error {
	if err := want.CheckCount(len(ls)); err != nil {
		return err
	}
	for i := range ls {
		if err := want.CheckID(i, ls[i].ID); err != nil {
			return err
		}
	}
	return nil
}
