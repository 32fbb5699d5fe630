package restcall

import (
	"context"
	"encoding/binary"
	"io"
	"net/http"

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
	var enc scenarios = pbEncoding
	if o.Payload != nil {
		enc = payloadProtobuf(o.Payload) // payload.go
	}
	return open(o, enc, func(c *client) *Protobuf { c.proto = true; return &Protobuf{c} })
}

// pbEncoding: the answers are the contract's messages, Version,
// MeteoriteLandingList and StatusResponse (the stream varint-delimited
// MeteoriteLanding messages), decoded with the generated code.
var pbEncoding = &encoding[pb.Version, pb.MeteoriteLandingList, pb.StatusResponse]{
	accept:     api.TypeProtobuf,
	streamType: api.TypeProtobuf,
	unmarshal:  func(b []byte, m any) error { return proto.Unmarshal(b, m.(proto.Message)) },
	marshal:    func(m any) ([]byte, error) { return proto.Marshal(m.(proto.Message)) },
	version:    (*pb.Version).GetApiVersion,
	records: func(want *call.Records, list *pb.MeteoriteLandingList) error {
		return want.CheckMessages(list.GetMeteoriteLandings())
	},
	status: (*pb.StatusResponse).GetStatus,
	body: func(c *client) (any, error) {
		ls, err := c.payload()
		return data.ProtoList(ls), err
	},
	stream: func(c *client, req *http.Request, want *call.Records) call.Caller {
		return &pbStream{streamed: streamed{c: c, req: req, want: want, record: recorder(pbDecode[pb.MeteoriteLanding],
			func(n int, m *pb.MeteoriteLanding) error { return want.CheckID(n, m.GetId()) })}}
	},
}

// pbDecode unmarshals b into v, a generated message.
func pbDecode[T any, P interface {
	*T
	proto.Message
}](b []byte, v *T) error {
	return proto.Unmarshal(b, P(v))
}

// pbStream: GET .../LargePayload/stream (protobuf) -> varint-delimited
// MeteoriteLanding messages, each decoded as it arrives (and timed on its
// own: reading the message's bytes is not decoding).
type pbStream struct {
	streamed
	msg []byte // scratch for one message's bytes
}

// maxStreamMessage bounds one streamed message (protodelim's default).
const maxStreamMessage = 4 << 20

// Call implements call.Caller.
func (a *pbStream) Call(ctx context.Context) (call.Outcome, error) {
	return a.call(ctx, api.TypeProtobuf, a.records)
}

// records reads, decodes and checks the records of the answer a.br reads
// (body tracks its read failures), and their count. timer may be nil.
func (a *pbStream) records(timer *call.Timer, body *trackReader) error {
	n := 0
	for {
		size, err := binary.ReadUvarint(a.br)
		if err == io.EOF {
			break
		} else if err != nil {
			return body.decodeErr("record", err)
		}
		if size > maxStreamMessage {
			return call.Invalid("record %d: %d bytes, more than %d", n, size, maxStreamMessage)
		}
		if uint64(cap(a.msg)) < size {
			a.msg = make([]byte, size)
		}
		buf := a.msg[:size]
		if _, err := io.ReadFull(a.br, buf); err != nil {
			return body.decodeErr("record", err)
		}
		if err := a.record(timer, n, buf); err != nil {
			return err
		}
		n++
	}
	if body.err != nil {
		return body.decodeErr("stream", body.err)
	}
	return a.want.CheckCount(n)
}
