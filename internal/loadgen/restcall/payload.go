package restcall

// The user's payload (call.Options.Payload) over REST: the same routes,
// adapters and checks as the meteorites, with the payload's typed items
// decoded by the JSON codec or the payload's compiled protobuf codec.

import (
	"net/http"

	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/payload"
)

// checkItems checks a list answer: its number, then every item.
func checkItems(want *call.Records, it *payload.Items) error {
	if err := want.CheckCount(it.Len()); err != nil {
		return err
	}
	if err := it.Check(); err != nil {
		return call.Invalid("%v", err)
	}
	return nil
}

// itemRecorder decodes one streamed item with decode and checks it.
func itemRecorder(p *payload.Payload, decode func(b []byte) (any, error)) func(*call.Timer, int, []byte) error {
	return recorder(func(b []byte, v *any) error {
		var err error
		*v, err = decode(b)
		return err
	}, func(n int, v *any) error {
		if err := p.CheckItem(n, *v); err != nil {
			return call.Invalid("%v", err)
		}
		return nil
	})
}

// payloadJSON is jsonEncoding for payload p: the list decoded into a []T.
func payloadJSON(jc *jsoncodec.Codec, p *payload.Payload) *encoding[string, payload.Items, string] {
	e := jsonEncoding(jc)
	return &encoding[string, payload.Items, string]{
		accept:     e.accept,
		streamType: e.streamType,
		unmarshal: func(b []byte, v any) error {
			it, ok := v.(*payload.Items)
			if !ok {
				return jc.Unmarshal(b, v)
			}
			list := p.NewList()
			err := jc.Unmarshal(b, list)
			*it = p.Decoded(list)
			return err
		},
		marshal: jc.Marshal,
		version: e.version,
		records: checkItems,
		status:  e.status,
		body: func(c *client) (any, error) {
			return p.Items(c.records).List(), nil
		},
		stream: func(c *client, req *http.Request, want *call.Records) call.Caller {
			return &jsonStream{streamed: streamed{c: c, req: req, want: want, record: itemRecorder(p, func(b []byte) (any, error) {
				v := p.NewItem()
				return v, jc.Unmarshal(b, v)
			})}}
		},
	}
}

// payloadProtobuf is pbEncoding for payload p: its messages decoded by the
// payload's compiled codec.
func payloadProtobuf(p *payload.Payload) *encoding[pb.Version, payload.Items, pb.StatusResponse] {
	return &encoding[pb.Version, payload.Items, pb.StatusResponse]{
		accept:     api.TypeProtobuf,
		streamType: api.TypeProtobuf,
		unmarshal: func(b []byte, v any) error {
			it, ok := v.(*payload.Items)
			if !ok {
				return proto.Unmarshal(b, v.(proto.Message))
			}
			var err error
			*it, err = p.DecodeList(b)
			return err
		},
		marshal: func(v any) ([]byte, error) { return v.(payload.Message).AppendProto(nil) },
		version: pbEncoding.version,
		records: checkItems,
		status:  pbEncoding.status,
		body: func(c *client) (any, error) {
			return &payload.List{P: p, Items: p.Items(c.records)}, nil
		},
		stream: func(c *client, req *http.Request, want *call.Records) call.Caller {
			return &pbStream{streamed: streamed{c: c, req: req, want: want, record: itemRecorder(p, p.DecodeItem)}}
		},
	}
}
