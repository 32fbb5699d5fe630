package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/payload/payloadtest"
)

// BenchmarkPayloadVsBuiltin is the done-when of --payload: the meteorites
// served through it against the built-in path, side by side, for the
// server's work per call (large and post, over REST JSON, REST protobuf
// and gRPC) and the client's decoding (large) and encoding (post). Each
// iteration runs both paths, in alternating order, and times each, so the
// two are measured interleaved on a noisy machine: the metrics are each
// path's ns/op and their ratio (payload/builtin; 1.15 is 15% slower).
//
// The server's work is everything above the transport, which both paths
// share: for REST the whole handler into a recorder (routing, encoding or
// decoding, writing); for gRPC the service method and the server codec's
// Marshal (large) or Unmarshal (post). The client's is the adapters'
// decode: the JSON codec, proto.Unmarshal or grpc-go's codec.
func BenchmarkPayloadVsBuiltin(b *testing.B) {
	bs, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	p := payloadtest.Meteorites(b)
	ps, err := New(Config{Payload: p})
	if err != nil {
		b.Fatal(err)
	}
	ls := data.MustLandings()
	jsonBody, _ := json.Marshal(ls)
	list := data.ProtoList(ls)
	protoBody, _ := proto.Marshal(list)
	svc := &grpcService{s: bs}
	psvc := &payloadService{s: ps, p: p}
	ctx := context.Background()
	items := p.Items(0)

	rest := func(s *Server, method, accept string, body []byte) func() {
		return func() {
			var r *http.Request
			if body != nil {
				r = httptest.NewRequest(method, api.PathList, bytes.NewReader(body))
				r.Header.Set("Content-Type", accept)
			} else {
				r = httptest.NewRequest(method, api.PathList, nil)
			}
			r.Header.Set("Accept", accept)
			w := httptest.NewRecorder()
			s.rest.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				b.Fatalf("%s %s: %d %s", method, accept, w.Code, w.Body)
			}
		}
	}
	marshal := func(s *Server, get func() (any, error)) func() {
		return func() {
			v, err := get()
			if err != nil {
				b.Fatal(err)
			}
			out, err := s.codec.Marshal(v)
			if err != nil {
				b.Fatal(err)
			}
			out.Free()
		}
	}
	unmarshal := func(s *Server, v func() any, then func(any) error) func() {
		return func() {
			m := v()
			if err := s.codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(protoBody)}, m); err != nil {
				b.Fatal(err)
			}
			if err := s.codec.check(m); err != nil {
				b.Fatal(err)
			}
			if err := then(m); err != nil {
				b.Fatal(err)
			}
		}
	}
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	jc := jsoncodec.Default()
	cases := []struct {
		name             string
		builtin, payload func()
	}{
		{"server/large/rest", rest(bs, http.MethodGet, api.TypeJSON, nil), rest(ps, http.MethodGet, api.TypeJSON, nil)},
		{"server/large/rest-protobuf", rest(bs, http.MethodGet, api.TypeProtobuf, nil), rest(ps, http.MethodGet, api.TypeProtobuf, nil)},
		{"server/large/grpc",
			marshal(bs, func() (any, error) { return svc.GetLargePayloadAsList(ctx, &pb.EmptyRequest{}) }),
			marshal(ps, func() (any, error) { return psvc.list(ctx, &pb.EmptyRequest{}) })},
		{"server/post/rest", rest(bs, http.MethodPost, api.TypeJSON, jsonBody), rest(ps, http.MethodPost, api.TypeJSON, jsonBody)},
		{"server/post/rest-protobuf", rest(bs, http.MethodPost, api.TypeProtobuf, protoBody), rest(ps, http.MethodPost, api.TypeProtobuf, protoBody)},
		{"server/post/grpc",
			unmarshal(bs, func() any { return new(pb.MeteoriteLandingList) }, func(m any) error {
				_, err := svc.PostLargePayload(ctx, m.(*pb.MeteoriteLandingList))
				return err
			}),
			unmarshal(ps, func() any { return &payload.List{P: p} }, func(m any) error {
				_, err := psvc.post(ctx, m)
				return err
			})},
		{"client-decode/large/rest",
			func() { var v []data.Landing; must(jc.Unmarshal(jsonBody, &v)) },
			func() { must(jc.Unmarshal(jsonBody, p.NewList())) }},
		{"client-decode/large/rest-protobuf",
			func() { must(proto.Unmarshal(protoBody, new(pb.MeteoriteLandingList))) },
			func() { _, err := p.DecodeList(protoBody); must(err) }},
		{"client-decode/large/grpc",
			func() {
				must(bs.codec.CodecV2.Unmarshal(mem.BufferSlice{mem.SliceBuffer(protoBody)}, new(pb.MeteoriteLandingList)))
			},
			func() {
				must(ps.codec.CodecV2.Unmarshal(mem.BufferSlice{mem.SliceBuffer(protoBody)}, &payload.List{P: p}))
			}},
		{"client-encode/post/rest",
			func() { _, err := jc.Marshal(ls); must(err) },
			func() { _, err := jc.Marshal(items.JSON(0, items.Len())); must(err) }},
		{"client-encode/post/rest-protobuf",
			func() { _, err := proto.Marshal(list); must(err) },
			func() { _, err := items.AppendList(nil); must(err) }},
		{"client-encode/post/grpc",
			func() { out, err := bs.codec.CodecV2.Marshal(list); must(err); out.Free() },
			func() { out, err := ps.codec.CodecV2.Marshal(&payload.List{P: p, Items: items}); must(err); out.Free() }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			c.builtin() // warm both paths' pools and caches
			c.payload()
			var tb, tp time.Duration
			n := 0
			for b.Loop() {
				first, second, t1, t2 := c.builtin, c.payload, &tb, &tp
				if n%2 == 1 {
					first, second, t1, t2 = c.payload, c.builtin, &tp, &tb
				}
				t0 := time.Now()
				first()
				tm := time.Now()
				second()
				*t2 += time.Since(tm)
				*t1 += tm.Sub(t0)
				n++
			}
			b.ReportMetric(float64(tb.Nanoseconds())/float64(n), "builtin-ns/op")
			b.ReportMetric(float64(tp.Nanoseconds())/float64(n), "payload-ns/op")
			b.ReportMetric(float64(tp)/float64(tb), "payload/builtin")
		})
	}
}
