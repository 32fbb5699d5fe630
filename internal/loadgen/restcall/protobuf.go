package restcall

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// Protobuf is the "rest-protobuf" client: the contract's protobuf messages
// over HTTP/1.1, decoded with the generated code. It isolates the encoding
// (JSON vs protobuf) from the transport (HTTP/1.1 vs HTTP/2).
type Protobuf struct{ *client }

// NewProtobuf opens a protobuf-over-HTTP/1.1 client.
func NewProtobuf(o call.Options) (*Protobuf, error) {
	c, err := newClient(o)
	if err != nil {
		return nil, err
	}
	return &Protobuf{c}, nil
}

// Caller implements call.Client.
func (c *Protobuf) Caller(scenario api.Scenario) (call.Caller, error) {
	return newCaller(scenario, map[api.Scenario]func() (call.Caller, error){
		api.Small: func() (call.Caller, error) {
			return &pbSmall{c: c.client, req: c.template(http.MethodGet, api.PathVersion, api.TypeProtobuf, "")}, nil
		},
		api.Large: func() (call.Caller, error) {
			want, err := c.want()
			return &pbLarge{c: c.client, req: c.template(http.MethodGet, api.PathList, api.TypeProtobuf, ""), want: want}, err
		},
		api.Stream: func() (call.Caller, error) {
			want, err := c.want()
			return &pbStream{c: c.client, req: c.template(http.MethodGet, api.PathStream, api.TypeProtobuf, ""), want: want}, err
		},
		api.Post: func() (call.Caller, error) {
			ls, err := c.payload()
			return &pbPost{c: c.client, req: c.template(http.MethodPost, api.PathList, api.TypeProtobuf, api.TypeProtobuf), list: data.ProtoList(ls)}, err
		},
	})
}

// pbSmall: GET /api/MeteoriteLandings (protobuf) -> Version.
type pbSmall struct {
	c   *client
	req *http.Request
	buf bytes.Buffer
}

func (a *pbSmall) Call(ctx context.Context) (call.Outcome, error) {
	timer := call.StartTimer()
	resp, err := a.c.do(a.req.WithContext(ctx), api.TypeProtobuf)
	if err != nil {
		return call.Outcome{}, err
	}
	if err := readBody(&a.buf, resp); err != nil {
		return call.Outcome{}, err
	}
	timer.Received()
	t0 := time.Now()
	var v pb.Version
	err = proto.Unmarshal(a.buf.Bytes(), &v)
	timer.Decoded(t0)
	if err != nil {
		return call.Outcome{}, call.Invalid("decode version: %v", err)
	}
	return timer.Outcome(), call.CheckString(v.GetApiVersion(), data.Version)
}

// pbLarge: GET .../LargePayload (protobuf) -> MeteoriteLandingList.
type pbLarge struct {
	c    *client
	req  *http.Request
	want *call.Records
	buf  bytes.Buffer
}

func (a *pbLarge) Call(ctx context.Context) (call.Outcome, error) {
	timer := call.StartTimer()
	resp, err := a.c.do(a.req.WithContext(ctx), api.TypeProtobuf)
	if err != nil {
		return call.Outcome{}, err
	}
	if err := readBody(&a.buf, resp); err != nil {
		return call.Outcome{}, err
	}
	timer.Received()
	t0 := time.Now()
	var list pb.MeteoriteLandingList
	err = proto.Unmarshal(a.buf.Bytes(), &list)
	timer.Decoded(t0)
	if err != nil {
		return call.Outcome{}, call.Invalid("decode records: %v", err)
	}
	return timer.Outcome(), a.want.CheckMessages(list.GetMeteoriteLandings())
}

// pbStream: GET .../LargePayload/stream (protobuf) -> varint-delimited
// MeteoriteLanding messages, each decoded as it arrives (and timed on its
// own: reading the message's bytes is not decoding).
type pbStream struct {
	c    *client
	req  *http.Request
	want *call.Records
	br   *bufio.Reader
	msg  []byte // scratch for one message's bytes
}

// maxStreamMessage bounds one streamed message (protodelim's default).
const maxStreamMessage = 4 << 20

func (a *pbStream) Call(ctx context.Context) (call.Outcome, error) {
	timer := call.StartTimer()
	resp, err := a.c.do(a.req.WithContext(ctx), api.TypeProtobuf)
	if err != nil {
		return call.Outcome{}, err
	}
	defer resp.Body.Close()
	body := &trackReader{r: resp.Body}
	a.br = resetReader(a.br, body)
	n := 0
	for {
		size, err := binary.ReadUvarint(a.br)
		if err == io.EOF {
			break
		} else if err != nil {
			return call.Outcome{}, body.decodeErr("record", err)
		}
		if size > maxStreamMessage {
			return call.Outcome{}, call.Invalid("record %d: %d bytes, more than %d", n, size, maxStreamMessage)
		}
		if uint64(cap(a.msg)) < size {
			a.msg = make([]byte, size)
		}
		buf := a.msg[:size]
		if _, err := io.ReadFull(a.br, buf); err != nil {
			return call.Outcome{}, body.decodeErr("record", err)
		}
		t0 := time.Now()
		m := new(pb.MeteoriteLanding)
		err = proto.Unmarshal(buf, m)
		timer.Decoded(t0)
		if err != nil {
			return call.Outcome{}, call.Invalid("decode record: %v", err)
		}
		timer.Record()
		if err := a.want.CheckID(n, m.GetId()); err != nil {
			return call.Outcome{}, err
		}
		n++
	}
	if body.err != nil {
		return call.Outcome{}, body.decodeErr("stream", body.err)
	}
	return timer.Outcome(), a.want.CheckCount(n)
}

// pbPost: POST .../LargePayload (protobuf) with the records (1000 unless named),
// marshalled per call -> StatusResponse.
type pbPost struct {
	c    *client
	req  *http.Request
	list *pb.MeteoriteLandingList
	buf  bytes.Buffer
	gz   bodyGzipper
}

func (a *pbPost) Call(ctx context.Context) (call.Outcome, error) {
	timer := call.StartTimer()
	body, err := proto.Marshal(a.list)
	if err != nil {
		return call.Outcome{}, err
	}
	if a.c.gzip {
		body = a.gz.compress(body)
	}
	req := a.req.WithContext(ctx)
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	resp, err := a.c.do(req, api.TypeProtobuf)
	if err != nil {
		return call.Outcome{}, err
	}
	if err := readBody(&a.buf, resp); err != nil {
		return call.Outcome{}, err
	}
	timer.Received()
	t0 := time.Now()
	var st pb.StatusResponse
	err = proto.Unmarshal(a.buf.Bytes(), &st)
	timer.Decoded(t0)
	if err != nil {
		return call.Outcome{}, call.Invalid("decode status: %v", err)
	}
	return timer.Outcome(), call.CheckString(st.GetStatus(), data.Success)
}
