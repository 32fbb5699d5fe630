package restcall

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// JSON is the "rest" client: JSON over HTTP/1.1, decoded into
// data.Landing with the codec of call.Options.JSONCodec (encoding/json
// unless named), which the server is asked to use too (jsoncodec.Header).
type JSON struct{ *client }

// NewJSON opens a JSON-over-HTTP/1.1 client.
func NewJSON(o call.Options) (*JSON, error) {
	jc, err := jsoncodec.Get(o.JSONCodec)
	if err != nil {
		return nil, err
	}
	var enc scenarios = jsonEncodings[jc.Index()]
	if o.Payload != nil {
		enc = payloadJSON(jc, o.Payload) // payload.go
	}
	return open(o, enc, func(c *client) *JSON {
		if jc.Name != jsoncodec.Std {
			c.jsonCodec = jc.Name
		}
		return &JSON{c}
	})
}

// jsonEncodings are the JSON encodings, one per codec in jsoncodec.Names
// order.
var jsonEncodings = func() []*encoding[string, []data.Landing, string] {
	var out []*encoding[string, []data.Landing, string]
	for _, name := range jsoncodec.Names() {
		jc, _ := jsoncodec.Get(name)
		out = append(out, jsonEncoding(jc))
	}
	return out
}()

// jsonEncoding: the answers are JSON (the stream NDJSON), decoded with
// codec jc: a string, the records as one array of data.Landing, a string;
// a post sends the records as one JSON array.
func jsonEncoding(jc *jsoncodec.Codec) *encoding[string, []data.Landing, string] {
	return &encoding[string, []data.Landing, string]{
		accept:     api.TypeJSON,
		streamType: api.TypeNDJSON,
		unmarshal:  jc.Unmarshal,
		marshal:    jc.Marshal,
		version:    func(v *string) string { return *v },
		records:    func(want *call.Records, ls *[]data.Landing) error { return checkLandings(want, *ls) },
		status:     func(v *string) string { return *v },
		body:       func(c *client) (any, error) { return c.payload() },
		stream: func(c *client, req *http.Request, want *call.Records) call.Caller {
			return &jsonStream{streamed: streamed{c: c, req: req, want: want, record: recorder(decodeWith[data.Landing](jc.Unmarshal),
				func(n int, l *data.Landing) error { return want.CheckID(n, l.ID) })}}
		},
	}
}

// jsonStream: GET .../LargePayload/stream -> NDJSON, one record a line,
// each line decoded as it arrives (and timed on its own: reading the line
// is not decoding).
type jsonStream struct {
	streamed
	line []byte // scratch for a line longer than br's buffer
}

// Call implements call.Caller.
func (a *jsonStream) Call(ctx context.Context) (call.Outcome, error) {
	return a.call(ctx, api.TypeNDJSON, a.records)
}

// records reads, decodes and checks the records of the answer a.br reads
// (body tracks its read failures), and their count. timer may be nil.
func (a *jsonStream) records(timer *call.Timer, body *trackReader) error {
	n := 0
	for {
		line, rerr := a.readLine()
		var ce *call.Error
		switch {
		case rerr == nil, rerr == io.EOF:
		case errors.As(rerr, &ce):
			return rerr
		default:
			return body.decodeErr("stream", rerr)
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			if err := a.record(timer, n, line); err != nil {
				return err
			}
			n++
		}
		if rerr == io.EOF {
			break
		}
	}
	return a.want.CheckCount(n)
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
