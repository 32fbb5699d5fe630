package restcall

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"

	"google.golang.org/protobuf/encoding/protodelim"
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
	return newCaller(scenario, map[api.Scenario]func() call.Caller{
		api.Small: func() call.Caller {
			return &pbSmall{c: c.client, req: c.template(http.MethodGet, api.PathVersion, api.TypeProtobuf, "")}
		},
		api.Large: func() call.Caller {
			return &pbLarge{c: c.client, req: c.template(http.MethodGet, api.PathList, api.TypeProtobuf, "")}
		},
		api.Stream: func() call.Caller {
			return &pbStream{c: c.client, req: c.template(http.MethodGet, api.PathStream, api.TypeProtobuf, "")}
		},
		api.Post: func() call.Caller {
			return &pbPost{c: c.client, req: c.template(http.MethodPost, api.PathList, api.TypeProtobuf, api.TypeProtobuf), list: data.ProtoList(data.MustLandings())}
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
	resp, err := a.c.do(a.req.WithContext(ctx), api.TypeProtobuf)
	if err != nil {
		return call.Outcome{}, err
	}
	if err := readBody(&a.buf, resp); err != nil {
		return call.Outcome{}, err
	}
	var v pb.Version
	if err := proto.Unmarshal(a.buf.Bytes(), &v); err != nil {
		return call.Outcome{}, call.Invalid("decode version: %v", err)
	}
	return call.Outcome{}, call.CheckString(v.GetApiVersion(), data.Version)
}

// pbLarge: GET .../LargePayload (protobuf) -> MeteoriteLandingList.
type pbLarge struct {
	c   *client
	req *http.Request
	buf bytes.Buffer
}

func (a *pbLarge) Call(ctx context.Context) (call.Outcome, error) {
	resp, err := a.c.do(a.req.WithContext(ctx), api.TypeProtobuf)
	if err != nil {
		return call.Outcome{}, err
	}
	if err := readBody(&a.buf, resp); err != nil {
		return call.Outcome{}, err
	}
	var list pb.MeteoriteLandingList
	if err := proto.Unmarshal(a.buf.Bytes(), &list); err != nil {
		return call.Outcome{}, call.Invalid("decode records: %v", err)
	}
	return call.Outcome{}, call.CheckMessages(list.GetMeteoriteLandings())
}

// pbStream: GET .../LargePayload/stream (protobuf) -> varint-delimited
// MeteoriteLanding messages, decoded as they arrive.
type pbStream struct {
	c   *client
	req *http.Request
	br  *bufio.Reader
}

func (a *pbStream) Call(ctx context.Context) (call.Outcome, error) {
	timer := call.StartTimer()
	resp, err := a.c.do(a.req.WithContext(ctx), api.TypeProtobuf)
	if err != nil {
		return call.Outcome{}, err
	}
	defer resp.Body.Close()
	body := &trackReader{r: resp.Body}
	if a.br == nil {
		a.br = bufio.NewReaderSize(body, bufferSize)
	} else {
		a.br.Reset(body)
	}
	var ms []*pb.MeteoriteLanding
	for {
		m := new(pb.MeteoriteLanding)
		if err := protodelim.UnmarshalFrom(a.br, m); err == io.EOF {
			break
		} else if err != nil {
			return call.Outcome{}, body.decodeErr("record", err)
		}
		timer.Record()
		if err := call.CheckID(len(ms), m.GetId()); err != nil {
			return call.Outcome{}, err
		}
		ms = append(ms, m)
	}
	if body.err != nil {
		return call.Outcome{}, body.decodeErr("stream", body.err)
	}
	return timer.Outcome(), call.CheckCount(len(ms))
}

// pbPost: POST .../LargePayload (protobuf) with the 1000 records,
// marshalled per call -> StatusResponse.
type pbPost struct {
	c    *client
	req  *http.Request
	list *pb.MeteoriteLandingList
	buf  bytes.Buffer
}

func (a *pbPost) Call(ctx context.Context) (call.Outcome, error) {
	body, err := proto.Marshal(a.list)
	if err != nil {
		return call.Outcome{}, err
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
	var st pb.StatusResponse
	if err := proto.Unmarshal(a.buf.Bytes(), &st); err != nil {
		return call.Outcome{}, call.Invalid("decode status: %v", err)
	}
	return call.Outcome{}, call.CheckString(st.GetStatus(), data.Success)
}
