package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/server"
)

// BenchmarkCall is the protocol x method matrix over loopback, one call at a
// time on a kept-open connection. Client and server share this process, so
// allocations and time are both sides together; `meteorbench run` measures
// them apart. REST responses are read here but not decoded, while grpc-go
// always decodes on the client: the rows track each route's own cost over
// time and are not a protocol comparison (run decodes both alike).
func BenchmarkCall(b *testing.B) {
	c := startClient(b, server.Config{})
	jsonBody, _ := json.Marshal(data.MustLandings())
	protoBody, _ := proto.Marshal(data.ProtoList(data.MustLandings()))
	list := data.ProtoList(data.MustLandings())

	rest := func(method, path string, body []byte, hdr ...string) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			var n int64
			for b.Loop() {
				var r io.Reader
				if body != nil {
					r = bytes.NewReader(body)
				}
				req, _ := http.NewRequest(method, "http://"+c.addr+path, r)
				for i := 0; i+1 < len(hdr); i += 2 {
					req.Header.Set(hdr[i], hdr[i+1])
				}
				resp, err := c.http.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				m, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatal(resp.Status)
				}
				n += m
			}
			b.ReportMetric(float64(n)/float64(b.N), "respB/op")
		}
	}
	pbA := []string{"Accept", api.TypeProtobuf}
	b.Run("rest/GetVersion", rest(http.MethodGet, api.PathVersion, nil))
	b.Run("rest/GetLargePayloadAsList", rest(http.MethodGet, api.PathList, nil))
	b.Run("rest/GetLargePayload", rest(http.MethodGet, api.PathStream, nil))
	b.Run("rest/PostLargePayload", rest(http.MethodPost, api.PathList, jsonBody, "Content-Type", api.TypeJSON))
	b.Run("rest-protobuf/GetVersion", rest(http.MethodGet, api.PathVersion, nil, pbA...))
	b.Run("rest-protobuf/GetLargePayloadAsList", rest(http.MethodGet, api.PathList, nil, pbA...))
	b.Run("rest-protobuf/GetLargePayload", rest(http.MethodGet, api.PathStream, nil, pbA...))
	b.Run("rest-protobuf/PostLargePayload", rest(http.MethodPost, api.PathList, protoBody, "Content-Type", api.TypeProtobuf))

	ctx := c.ctx(b)
	b.Run("grpc/GetVersion", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.grpc.GetVersion(ctx, &pb.EmptyRequest{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("grpc/GetLargePayloadAsList", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.grpc.GetLargePayloadAsList(ctx, &pb.EmptyRequest{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("grpc/GetLargePayload", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := c.grpc.GetLargePayload(ctx, &pb.EmptyRequest{})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for ; ; n++ {
				if _, err := s.Recv(); err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
			if n != data.Count {
				b.Fatalf("%d messages", n)
			}
		}
	})
	b.Run("grpc/PostLargePayload", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.grpc.PostLargePayload(ctx, list); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRecords is the list call at several payload sizes (?records=N,
// metadata meteorbench-records), over loopback, client and server together:
//
//	go test -run '^$' -bench Records -benchmem ./internal/server
func BenchmarkRecords(b *testing.B) {
	c := startClient(b, server.Config{})
	for _, n := range []int{10, 1000, 10000, 100000} {
		q := fmt.Sprintf("%s?%s=%d", api.PathList, api.QueryRecords, n)
		for _, tc := range []struct{ name, accept string }{{"rest", ""}, {"rest-protobuf", api.TypeProtobuf}} {
			b.Run(fmt.Sprintf("%s/n=%d", tc.name, n), func(b *testing.B) {
				b.ReportAllocs()
				var size int64
				for b.Loop() {
					req, _ := http.NewRequest(http.MethodGet, "http://"+c.addr+q, nil)
					if tc.accept != "" {
						req.Header.Set("Accept", tc.accept)
					}
					resp, err := c.http.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					size, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Fatal(resp.Status)
					}
				}
				b.ReportMetric(float64(size), "respB/op")
			})
		}
		b.Run(fmt.Sprintf("grpc/n=%d", n), func(b *testing.B) {
			ctx := metadata.AppendToOutgoingContext(c.ctx(b), api.MetadataRecords, fmt.Sprint(n))
			b.ReportAllocs()
			for b.Loop() {
				l, err := c.grpc.GetLargePayloadAsList(ctx, &pb.EmptyRequest{})
				if err != nil {
					b.Fatal(err)
				}
				if len(l.MeteoriteLandings) != n {
					b.Fatalf("%d records", len(l.MeteoriteLandings))
				}
			}
		})
	}
}

// BenchmarkGRPCConnSetup: a new gRPC connection and one GetVersion on it,
// each op, to see what routing HTTP/2 by its first request (h2route.go)
// adds to a connection's setup on the native gRPC path. Calls on a
// kept-open connection are BenchmarkCall/grpc/*.
func BenchmarkGRPCConnSetup(b *testing.B) {
	c := startClient(b, server.Config{})
	b.ReportAllocs()
	for b.Loop() {
		cc, err := grpc.NewClient("passthrough:///"+c.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pb.NewMeteoriteLandingsServiceClient(cc).GetVersion(c.ctx(b), &pb.EmptyRequest{}); err != nil {
			b.Fatal(err)
		}
		cc.Close()
	}
}
