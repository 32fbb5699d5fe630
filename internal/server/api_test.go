package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/server"
)

func TestRESTJSON(t *testing.T) {
	c := startClient(t, server.Config{})

	t.Run("GetVersion", func(t *testing.T) {
		resp, body := c.do(t, http.MethodGet, api.PathVersion, nil)
		wantStatus(t, resp, body, http.StatusOK)
		wantContentType(t, resp, api.TypeJSON)
		var v string
		if err := json.Unmarshal(body, &v); err != nil || v != data.Version {
			t.Fatalf("body %q (%v), want the JSON string %q", body, err, data.Version)
		}
	})
	t.Run("GetLargePayloadAsList", func(t *testing.T) {
		resp, body := c.do(t, http.MethodGet, api.PathList, nil, "Accept", "application/json")
		wantStatus(t, resp, body, http.StatusOK)
		wantContentType(t, resp, api.TypeJSON)
		if resp.ContentLength != int64(len(body)) {
			t.Errorf("Content-Length %d, body %d bytes", resp.ContentLength, len(body))
		}
		var ls []data.Landing
		if err := json.Unmarshal(body, &ls); err != nil {
			t.Fatal(err)
		}
		checkLandings(t, "JSON list", ls)
	})
	t.Run("GetLargePayload/NDJSON", func(t *testing.T) {
		resp, body := c.do(t, http.MethodGet, api.PathStream, nil)
		wantStatus(t, resp, body, http.StatusOK)
		wantContentType(t, resp, api.TypeNDJSON)
		if len(resp.TransferEncoding) == 0 || resp.TransferEncoding[0] != "chunked" {
			t.Errorf("Transfer-Encoding %v, want chunked (a stream)", resp.TransferEncoding)
		}
		checkLandings(t, "NDJSON stream", decodeNDJSON(t, body))
	})
	t.Run("PostLargePayload", func(t *testing.T) {
		body, err := json.Marshal(data.MustLandings())
		if err != nil {
			t.Fatal(err)
		}
		for _, ct := range []string{"application/json", "application/json; charset=utf-8", ""} {
			hdr := []string{}
			if ct != "" {
				hdr = append(hdr, "Content-Type", ct)
			}
			resp, rb := c.do(t, http.MethodPost, api.PathList, body, hdr...)
			wantStatus(t, resp, rb, http.StatusOK)
			wantContentType(t, resp, api.TypeJSON)
			var s string
			if err := json.Unmarshal(rb, &s); err != nil || s != data.Success {
				t.Fatalf("Content-Type %q: body %q (%v), want the JSON string %q", ct, rb, err, data.Success)
			}
		}
	})
	t.Run("healthz", func(t *testing.T) {
		resp, body := c.do(t, http.MethodGet, api.PathHealth, nil)
		wantStatus(t, resp, body, http.StatusOK)
		wantContentType(t, resp, api.TypeJSON)
		if strings.TrimSpace(string(body)) != `{"status":"ok"}` {
			t.Fatalf("body %q", body)
		}
	})
	t.Run("HEAD and OPTIONS", func(t *testing.T) {
		resp, body := c.do(t, http.MethodHead, api.PathList, nil)
		wantStatus(t, resp, body, http.StatusOK)
		if len(body) != 0 || resp.ContentLength < 200_000 {
			t.Errorf("HEAD: body %d bytes, Content-Length %d; want none and the GET's length", len(body), resp.ContentLength)
		}
		resp, body = c.do(t, http.MethodOptions, api.PathList, nil)
		wantStatus(t, resp, body, http.StatusNoContent)
		if got := resp.Header.Get("Allow"); got != "GET, HEAD, POST, OPTIONS" {
			t.Errorf("OPTIONS: Allow %q", got)
		}
	})
}

func TestRESTProtobuf(t *testing.T) {
	c := startClient(t, server.Config{})
	accept := []string{"Accept", api.TypeProtobuf}

	t.Run("GetVersion", func(t *testing.T) {
		resp, body := c.do(t, http.MethodGet, api.PathVersion, nil, accept...)
		wantStatus(t, resp, body, http.StatusOK)
		wantContentType(t, resp, api.TypeProtobuf)
		var v pb.Version
		if err := proto.Unmarshal(body, &v); err != nil || v.GetApiVersion() != data.Version {
			t.Fatalf("body %q (%v): want Version %q", body, err, data.Version)
		}
	})
	t.Run("GetLargePayloadAsList", func(t *testing.T) {
		// A q-valued Accept that still prefers protobuf.
		resp, body := c.do(t, http.MethodGet, api.PathList, nil,
			"Accept", "application/json;q=0.5, application/x-protobuf")
		wantStatus(t, resp, body, http.StatusOK)
		wantContentType(t, resp, api.TypeProtobuf)
		var list pb.MeteoriteLandingList
		if err := proto.Unmarshal(body, &list); err != nil {
			t.Fatal(err)
		}
		checkProtoLandings(t, "protobuf list", list.GetMeteoriteLandings())
	})
	t.Run("GetLargePayload/delimited", func(t *testing.T) {
		resp, body := c.do(t, http.MethodGet, api.PathStream, nil, accept...)
		wantStatus(t, resp, body, http.StatusOK)
		wantContentType(t, resp, api.TypeProtobuf)
		checkProtoLandings(t, "delimited stream", decodeDelimited(t, body))
	})
	t.Run("PostLargePayload", func(t *testing.T) {
		body, err := proto.Marshal(data.ProtoList(data.MustLandings()))
		if err != nil {
			t.Fatal(err)
		}
		// The answer mirrors the body's encoding unless Accept says otherwise.
		for _, tc := range []struct {
			accept, want string
		}{
			{"", api.TypeProtobuf},
			{api.TypeProtobuf, api.TypeProtobuf},
			{api.TypeJSON, api.TypeJSON},
		} {
			hdr := []string{"Content-Type", api.TypeProtobuf}
			if tc.accept != "" {
				hdr = append(hdr, "Accept", tc.accept)
			}
			resp, rb := c.do(t, http.MethodPost, api.PathList, body, hdr...)
			wantStatus(t, resp, rb, http.StatusOK)
			wantContentType(t, resp, tc.want)
			var got string
			if tc.want == api.TypeProtobuf {
				var st pb.StatusResponse
				err = proto.Unmarshal(rb, &st)
				got = st.GetStatus()
			} else {
				err = json.Unmarshal(rb, &got)
			}
			if err != nil || got != data.Success {
				t.Fatalf("Accept %q: body %q (%v), want %q", tc.accept, rb, err, data.Success)
			}
		}
	})
}

func TestGRPC(t *testing.T) {
	c := startClient(t, server.Config{})

	t.Run("GetVersion", func(t *testing.T) {
		v, err := c.grpc.GetVersion(c.ctx(t), &pb.EmptyRequest{})
		if err != nil || v.GetApiVersion() != data.Version {
			t.Fatalf("GetVersion = %v, %v; want %q", v, err, data.Version)
		}
	})
	t.Run("GetLargePayloadAsList", func(t *testing.T) {
		list, err := c.grpc.GetLargePayloadAsList(c.ctx(t), &pb.EmptyRequest{})
		if err != nil {
			t.Fatal(err)
		}
		checkProtoLandings(t, "gRPC list", list.GetMeteoriteLandings())
	})
	t.Run("GetLargePayload", func(t *testing.T) {
		stream, err := c.grpc.GetLargePayload(c.ctx(t), &pb.EmptyRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ms, err := recvAll(stream)
		if err != nil {
			t.Fatalf("message %d: %v", len(ms)+1, err)
		}
		checkProtoLandings(t, "gRPC stream", ms)
	})
	t.Run("PostLargePayload", func(t *testing.T) {
		st, err := c.grpc.PostLargePayload(c.ctx(t), data.ProtoList(data.MustLandings()))
		if err != nil || st.GetStatus() != data.Success {
			t.Fatalf("PostLargePayload = %v, %v; want %q", st, err, data.Success)
		}
	})
	t.Run("PostLargePayload/invalid timestamp", func(t *testing.T) {
		list := data.ProtoList(data.MustLandings()[:3])
		list.MeteoriteLandings[2].Year.Nanos = -1 // not normalised
		_, err := c.grpc.PostLargePayload(c.ctx(t), list)
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("PostLargePayload with a bad timestamp: %v, want InvalidArgument", err)
		}
	})
	t.Run("health", func(t *testing.T) {
		hc := healthpb.NewHealthClient(c.cc)
		for _, svc := range []string{"", "MeteoriteLandingsService.MeteoriteLandingsService"} {
			resp, err := hc.Check(c.ctx(t), &healthpb.HealthCheckRequest{Service: svc})
			if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("Check(%q) = %v, %v; want SERVING", svc, resp, err)
			}
		}
	})
	t.Run("unknown method", func(t *testing.T) {
		err := c.cc.Invoke(c.ctx(t), "/MeteoriteLandingsService.MeteoriteLandingsService/Nope", &pb.EmptyRequest{}, new(pb.Version))
		if status.Code(err) != codes.Unimplemented {
			t.Fatalf("unknown method: %v, want Unimplemented", err)
		}
	})
}

// TestRESTBadProtobufTimestamp: a protobuf POST whose record has an invalid
// timestamp is refused, as over gRPC.
func TestRESTBadProtobufTimestamp(t *testing.T) {
	c := startClient(t, server.Config{})
	list := data.ProtoList(data.MustLandings()[:3])
	list.MeteoriteLandings[1].Year.Seconds = 1 << 50 // beyond year 9999
	body, err := proto.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	resp, rb := c.do(t, http.MethodPost, api.PathList, body, "Content-Type", api.TypeProtobuf)
	wantStatus(t, resp, rb, http.StatusBadRequest)
	wantJSONError(t, resp, rb, "invalid record 1")
}
