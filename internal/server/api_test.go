package server_test

// The API as a client sees it: every route and method (TestREST*, TestGRPC),
// the payload size (TestRecords*) and gzip both ways (TestGzip*).

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/testmode"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	grpcgzip "google.golang.org/grpc/encoding/gzip"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"
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
		checkJSONLandings(t, "JSON list", body)
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

// way is one of the six ways to fetch an answer of records: it returns the
// records, converted to landings, or a REST status / gRPC error.
type way struct {
	name string
	// fetch asks for n records (n == "" asks for none: the default).
	fetch func(t *testing.T, c *client, n string) ([]data.Landing, int, error)
}

func recordsPath(path, n string) string {
	if n == "" {
		return path
	}
	return path + "?" + api.QueryRecords + "=" + url.QueryEscape(n)
}

func recordsCtx(t *testing.T, c *client, n string) context.Context {
	ctx := c.ctx(t)
	if n != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, api.MetadataRecords, n)
	}
	return ctx
}

// restError checks a REST error answer: JSON {"error": "..."} naming the
// parameter.
func restError(t *testing.T, resp *http.Response, body []byte) int {
	t.Helper()
	if resp.StatusCode == http.StatusOK {
		return http.StatusOK
	}
	var e struct{ Error string }
	if ct := resp.Header.Get("Content-Type"); ct != api.TypeJSON {
		t.Errorf("error answer: Content-Type %q, want %q", ct, api.TypeJSON)
	}
	if err := json.Unmarshal(body, &e); err != nil || !strings.Contains(e.Error, api.QueryRecords) {
		t.Errorf("error body %q (%v): want a JSON error naming %q", body, err, api.QueryRecords)
	}
	return resp.StatusCode
}

var ways = []way{
	{"REST JSON list", func(t *testing.T, c *client, n string) ([]data.Landing, int, error) {
		resp, body := c.do(t, http.MethodGet, recordsPath(api.PathList, n), nil)
		if code := restError(t, resp, body); code != http.StatusOK {
			return nil, code, nil
		}
		var ls []data.Landing
		if err := json.Unmarshal(body, &ls); err != nil {
			t.Fatal(err)
		}
		return ls, http.StatusOK, nil
	}},
	{"REST NDJSON stream", func(t *testing.T, c *client, n string) ([]data.Landing, int, error) {
		resp, body := c.do(t, http.MethodGet, recordsPath(api.PathStream, n), nil)
		if code := restError(t, resp, body); code != http.StatusOK {
			return nil, code, nil
		}
		return decodeNDJSON(t, body), http.StatusOK, nil
	}},
	{"REST protobuf list", func(t *testing.T, c *client, n string) ([]data.Landing, int, error) {
		resp, body := c.do(t, http.MethodGet, recordsPath(api.PathList, n), nil, "Accept", api.TypeProtobuf)
		if code := restError(t, resp, body); code != http.StatusOK {
			return nil, code, nil
		}
		var list pb.MeteoriteLandingList
		if err := proto.Unmarshal(body, &list); err != nil {
			t.Fatal(err)
		}
		return fromProtos(t, list.GetMeteoriteLandings()), http.StatusOK, nil
	}},
	{"REST protobuf stream", func(t *testing.T, c *client, n string) ([]data.Landing, int, error) {
		resp, body := c.do(t, http.MethodGet, recordsPath(api.PathStream, n), nil, "Accept", api.TypeProtobuf)
		if code := restError(t, resp, body); code != http.StatusOK {
			return nil, code, nil
		}
		return fromProtos(t, decodeDelimited(t, body)), http.StatusOK, nil
	}},
	{"gRPC list", func(t *testing.T, c *client, n string) ([]data.Landing, int, error) {
		list, err := c.grpc.GetLargePayloadAsList(recordsCtx(t, c, n), &pb.EmptyRequest{})
		if err != nil {
			return nil, 0, err
		}
		return fromProtos(t, list.GetMeteoriteLandings()), 0, nil
	}},
	{"gRPC stream", func(t *testing.T, c *client, n string) ([]data.Landing, int, error) {
		st, err := c.grpc.GetLargePayload(recordsCtx(t, c, n), &pb.EmptyRequest{})
		if err != nil {
			return nil, 0, err
		}
		ms, err := recvAll(st)
		if err != nil {
			return nil, 0, err
		}
		return fromProtos(t, ms), 0, nil
	}},
}

// checkAnswer compares an answer with data.LandingsN(n), ids first.
func checkAnswer(t *testing.T, got []data.Landing, n int) {
	t.Helper()
	ids, err := data.IDsN(n)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d records, want %d", len(got), n)
	}
	for i := range got {
		if got[i].ID != ids[i] {
			t.Fatalf("record %d: id %d, want %d", i, got[i].ID, ids[i])
		}
	}
	want, err := data.LandingsN(n)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if d := diffLanding(got[i], want[i]); d != "" {
			t.Fatalf("record %d: %s", i, d)
		}
	}
}

func TestRecordsN(t *testing.T) {
	c := startClient(t, server.Config{})
	for _, w := range ways {
		for _, n := range []int{1, 10, 1000, 2500} {
			t.Run(fmt.Sprintf("%s/%d", w.name, n), func(t *testing.T) {
				got, code, err := w.fetch(t, c, fmt.Sprint(n))
				if err != nil || code >= 400 {
					t.Fatalf("status %d, error %v", code, err)
				}
				checkAnswer(t, got, n)
			})
		}
		t.Run(w.name+"/default", func(t *testing.T) {
			got, code, err := w.fetch(t, c, "")
			if err != nil || code >= 400 {
				t.Fatalf("status %d, error %v", code, err)
			}
			checkAnswer(t, got, api.DefaultRecords)
		})
	}
}

// The answer without a size is byte for byte what the server sent before
// sizes existed: the encoding of the embedded records, as the old code
// produced it (and ?records=1000 is the same bytes).
func TestRecordsDefaultUnchanged(t *testing.T) {
	c := startClient(t, server.Config{})
	ls := data.MustLandings()
	var jsonList, ndjson bytes.Buffer
	if err := json.NewEncoder(&jsonList).Encode(ls); err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(&ndjson)
	for i := range ls {
		if err := enc.Encode(&ls[i]); err != nil {
			t.Fatal(err)
		}
	}
	list := data.ProtoList(ls)
	pbList, err := proto.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	var delimited bytes.Buffer
	for _, m := range list.MeteoriteLandings {
		if _, err := protodelim.MarshalTo(&delimited, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, path, accept string
		want               []byte
	}{
		{"JSON list", api.PathList, "", jsonList.Bytes()},
		{"NDJSON stream", api.PathStream, "", ndjson.Bytes()},
		{"protobuf list", api.PathList, api.TypeProtobuf, pbList},
		{"protobuf stream", api.PathStream, api.TypeProtobuf, delimited.Bytes()},
	} {
		for _, q := range []string{"", "?records=1000", "?other=x"} {
			resp, body := c.do(t, http.MethodGet, tc.path+q, nil, "Accept", tc.accept)
			wantStatus(t, resp, body, http.StatusOK)
			if !bytes.Equal(body, tc.want) {
				t.Errorf("%s%s: %d bytes differ from the %d of the original answer", tc.name, q, len(body), len(tc.want))
			}
		}
	}
	for _, n := range []string{"", "1000"} {
		got, err := c.grpc.GetLargePayloadAsList(recordsCtx(t, c, n), &pb.EmptyRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := proto.Marshal(got); !bytes.Equal(b, pbList) {
			t.Errorf("gRPC list (records %q) differs from the original answer", n)
		}
		st, err := c.grpc.GetLargePayload(recordsCtx(t, c, n), &pb.EmptyRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ms, err := recvAll(st)
		if err != nil {
			t.Fatal(err)
		}
		var got2 bytes.Buffer
		for _, m := range ms {
			if _, err := protodelim.MarshalTo(&got2, m); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got2.Bytes(), delimited.Bytes()) {
			t.Errorf("gRPC stream (records %q) differs from the original answer", n)
		}
	}
}

// Out-of-range and malformed sizes are refused on every way in, counted as
// errors, and the server goes on answering.
func TestRecordsRejected(t *testing.T) {
	c := startClient(t, server.Config{})
	before := scrape(t, c)
	bad := []string{"0", "-1", "abc", "100001", "1e3", "+5", "0x10", " 5", "5 ", "", "1.0", "99999999999999999999"}
	for _, w := range ways {
		for _, n := range bad {
			if n == "" && strings.HasPrefix(w.name, "gRPC") {
				continue // empty metadata value: checked below
			}
			// "" as a query value: ?records= (asked, but empty).
			name := fmt.Sprintf("%s/%q", w.name, n)
			t.Run(name, func(t *testing.T) {
				var (
					got  []data.Landing
					code int
					err  error
				)
				if n == "" {
					resp, body := c.do(t, http.MethodGet, restPathOf(w.name)+"?records=", nil, "Accept", restAcceptOf(w.name))
					code = restError(t, resp, body)
				} else {
					got, code, err = w.fetch(t, c, n)
				}
				if strings.HasPrefix(w.name, "gRPC") {
					if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), api.MetadataRecords) {
						t.Fatalf("got %d records, error %v; want INVALID_ARGUMENT naming %s", len(got), err, api.MetadataRecords)
					}
					return
				}
				if code != http.StatusBadRequest {
					t.Fatalf("status %d (%d records), want 400", code, len(got))
				}
			})
		}
	}
	// A size given twice is ambiguous; so is an undecodable escape.
	for _, q := range []string{"records=1&records=2", "records=%zz", "%72ecords=1&records=1"} {
		for _, path := range []string{api.PathList, api.PathStream} {
			resp, body := c.do(t, http.MethodGet, path+"?"+q, nil)
			if restError(t, resp, body) != http.StatusBadRequest {
				t.Errorf("GET %s?%s: %s, want 400", path, q, resp.Status)
			}
		}
	}
	ctx := metadata.AppendToOutgoingContext(c.ctx(t), api.MetadataRecords, "1", api.MetadataRecords, "2")
	if _, err := c.grpc.GetLargePayloadAsList(ctx, &pb.EmptyRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("metadata given twice: %v, want INVALID_ARGUMENT", err)
	}
	ctx = metadata.AppendToOutgoingContext(c.ctx(t), api.MetadataRecords, "")
	if _, err := c.grpc.GetLargePayloadAsList(ctx, &pb.EmptyRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("empty metadata value: %v, want INVALID_ARGUMENT", err)
	}

	// Still serving, on both protocols, the full default answer.
	for _, w := range ways {
		got, code, err := w.fetch(t, c, "")
		if err != nil || code >= 400 {
			t.Fatalf("%s after the rejections: status %d, error %v", w.name, code, err)
		}
		checkAnswer(t, got, api.DefaultRecords)
	}

	// Each rejection is a data call that reached its handler and failed.
	after := scrape(t, c)
	restPerRoute := len(bad) + 3 // + the three malformed queries
	for _, tc := range []struct {
		protocol, method string
		calls, errs      float64
	}{
		{"rest", api.MethodGetLargePayloadAsList, float64(restPerRoute + 1), float64(restPerRoute)},
		{"rest", api.MethodGetLargePayload, float64(restPerRoute + 1), float64(restPerRoute)},
		{"rest-protobuf", api.MethodGetLargePayloadAsList, float64(len(bad) + 1), float64(len(bad))},
		{"rest-protobuf", api.MethodGetLargePayload, float64(len(bad) + 1), float64(len(bad))},
		{"grpc", api.MethodGetLargePayloadAsList, float64(len(bad) - 1 + 2 + 1), float64(len(bad) - 1 + 2)},
		{"grpc", api.MethodGetLargePayload, float64(len(bad) - 1 + 1), float64(len(bad) - 1)},
	} {
		rk := counterKey(api.MetricRequests, tc.protocol, tc.method)
		ek := counterKey(api.MetricErrors, tc.protocol, tc.method)
		if d := after[rk] - before[rk]; d != tc.calls {
			t.Errorf("%s: +%v, want +%v", rk, d, tc.calls)
		}
		if d := after[ek] - before[ek]; d != tc.errs {
			t.Errorf("%s: +%v, want +%v", ek, d, tc.errs)
		}
	}
}

func restPathOf(wayName string) string {
	if strings.Contains(wayName, "stream") {
		return api.PathStream
	}
	return api.PathList
}

func restAcceptOf(wayName string) string {
	if strings.Contains(wayName, "protobuf") {
		return api.TypeProtobuf
	}
	return ""
}

// The size applies to the list and stream only: other routes ignore it, as
// they ignore any query, and so does the upload.
func TestRecordsIgnoredElsewhere(t *testing.T) {
	c := startClient(t, server.Config{})
	resp, body := c.do(t, http.MethodGet, api.PathVersion+"?records=abc", nil)
	wantStatus(t, resp, body, http.StatusOK)
	body3, _ := json.Marshal(data.MustLandings()[:3])
	resp, body = c.do(t, http.MethodPost, api.PathList+"?records=abc", body3, "Content-Type", api.TypeJSON)
	wantStatus(t, resp, body, http.StatusOK)
	resp, body = c.do(t, http.MethodGet, api.PathList+"?a=1&records=7&b", nil)
	wantStatus(t, resp, body, http.StatusOK)
	var ls []data.Landing
	if err := json.Unmarshal(body, &ls); err != nil || len(ls) != 7 {
		t.Errorf("?a=1&records=7&b: %d records (%v), want 7", len(ls), err)
	}
	resp, body = c.do(t, http.MethodHead, api.PathList+"?records=10", nil)
	wantStatus(t, resp, body, http.StatusOK)
	if len(body) != 0 || resp.ContentLength < 2000 || resp.ContentLength > 3000 {
		t.Errorf("HEAD ?records=10: body %d bytes, Content-Length %d", len(body), resp.ContentLength)
	}
	ctx := metadata.AppendToOutgoingContext(c.ctx(t), api.MetadataRecords, "abc")
	if v, err := c.grpc.GetVersion(ctx, &pb.EmptyRequest{}); err != nil || v.GetApiVersion() != data.Version {
		t.Errorf("GetVersion with metadata records=abc: %v, %v", v, err)
	}
}

// The largest answer: ~10 MB as one gRPC message, over grpc-go's default 4 MiB
// client receive limit, so a client must raise MaxCallRecvMsgSize; the
// server's send side has no limit. A stream of the same records has no such
// problem (each message is ~100 B).
func TestRecordsMax(t *testing.T) {
	testmode.SkipShort(t, "encodes 100,000 records several times, one call at a time; runs in the normal step")
	addr := servertest.Start(t, server.Config{})
	c := newClient(t, addr, "") // MaxCallRecvMsgSize 64 MiB
	max := fmt.Sprint(api.MaxRecords)
	for _, w := range ways {
		if w.name == "REST JSON list" || w.name == "REST NDJSON stream" {
			continue // the same records as the protobuf forms, 2.2x the bytes
		}
		t.Run(w.name, func(t *testing.T) {
			got, code, err := w.fetch(t, c, max)
			if err != nil || code >= 400 {
				t.Fatalf("status %d, error %v", code, err)
			}
			if len(got) != api.MaxRecords {
				t.Fatalf("%d records, want %d", len(got), api.MaxRecords)
			}
			ids, _ := data.IDsN(api.MaxRecords)
			for i := range got {
				if got[i].ID != ids[i] {
					t.Fatalf("record %d: id %d, want %d", i, got[i].ID, ids[i])
				}
			}
		})
	}
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx := metadata.AppendToOutgoingContext(c.ctx(t), api.MetadataRecords, max)
	_, err = pb.NewMeteoriteLandingsServiceClient(cc).GetLargePayloadAsList(ctx, &pb.EmptyRequest{})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("default client limit: %v; want RESOURCE_EXHAUSTED (the message is over 4 MiB)", err)
	}
}

func gunzip(t testing.TB, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	return out
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestGzipREST: every data answer, asked for with Accept-Encoding: gzip,
// comes gzipped, inflates to exactly the identity answer and (but for the
// tiny version string) is smaller.
func TestGzipREST(t *testing.T) {
	c := startClient(t, server.Config{})
	for _, tc := range []struct {
		name, path, accept, ct string
		tiny                   bool
	}{
		{"version JSON", api.PathVersion, api.TypeJSON, api.TypeJSON, true},
		{"list JSON", api.PathList, api.TypeJSON, api.TypeJSON, false},
		{"stream NDJSON", api.PathStream, api.TypeNDJSON, api.TypeNDJSON, false},
		{"list protobuf", api.PathList, api.TypeProtobuf, api.TypeProtobuf, false},
		{"stream protobuf", api.PathStream, api.TypeProtobuf, api.TypeProtobuf, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain, plainBody := c.do(t, http.MethodGet, tc.path, nil, "Accept", tc.accept)
			wantStatus(t, plain, plainBody, http.StatusOK)
			if ce := plain.Header.Get("Content-Encoding"); ce != "" {
				t.Fatalf("identity answer has Content-Encoding %q", ce)
			}
			for _, ae := range []string{"gzip", "deflate, gzip;q=0.5, br", "*"} {
				resp, body := c.do(t, http.MethodGet, tc.path, nil, "Accept", tc.accept, "Accept-Encoding", ae)
				wantStatus(t, resp, body, http.StatusOK)
				wantContentType(t, resp, tc.ct)
				if ce := resp.Header.Get("Content-Encoding"); ce != "gzip" {
					t.Fatalf("Accept-Encoding %q: Content-Encoding %q, want gzip", ae, ce)
				}
				if v := resp.Header.Get("Vary"); v != "Accept-Encoding" {
					t.Errorf("Vary %q, want Accept-Encoding", v)
				}
				if got := gunzip(t, body); !bytes.Equal(got, plainBody) {
					t.Fatalf("inflated answer (%d B) differs from the identity answer (%d B)", len(got), len(plainBody))
				}
				if !tc.tiny && len(body)*2 > len(plainBody) {
					t.Errorf("gzip answer %d B, identity %d B: want under half", len(body), len(plainBody))
				}
			}
		})
	}
}

// TestGzipIdentityUnchanged: a client that does not ask for gzip (curl
// without --compressed), or refuses it, gets the answer it got before
// compression existed: the same header fields, no Vary, the same bytes.
func TestGzipIdentityUnchanged(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	ls := data.MustLandings()
	var wantList bytes.Buffer
	if err := json.NewEncoder(&wantList).Encode(ls); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, accept, extra string
		want                []string // header field names besides Date
	}{
		{api.PathList, "", "", []string{"Content-Length", "Content-Type"}},
		{api.PathList, api.TypeProtobuf, "", []string{"Content-Length", "Content-Type"}},
		{api.PathStream, "", "", []string{"Content-Type"}},
		{api.PathList, "", "Accept-Encoding: gzip;q=0\r\n", []string{"Content-Length", "Content-Type"}},
		{api.PathList, "", "Accept-Encoding: identity\r\n", []string{"Content-Length", "Content-Type"}},
	} {
		conn := dialRaw(t, addr)
		req := "GET " + tc.path + " HTTP/1.1\r\nHost: x\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n"
		if tc.accept != "" {
			req = "GET " + tc.path + " HTTP/1.1\r\nHost: x\r\nAccept: " + tc.accept + "\r\n"
		}
		if _, err := io.WriteString(conn, req+tc.extra+"\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, body := readResponse(t, conn)
		h := resp.Header.Clone()
		h.Del("Date")
		if got := slices.Sorted(maps.Keys(h)); !slices.Equal(got, tc.want) {
			t.Errorf("%s %q %q: header fields %v, want %v", tc.path, tc.accept, tc.extra, got, tc.want)
		}
		if tc.path == api.PathList && tc.accept == "" && !bytes.Equal(body, wantList.Bytes()) {
			t.Errorf("%s %q: body is not the JSON encoding of the records", tc.path, tc.extra)
		}
		if tc.path == api.PathStream {
			if got := len(decodeNDJSON(t, body)); got != len(ls) {
				t.Errorf("stream: %d records", got)
			}
		}
	}
}

// TestGzipPost: gzip request bodies are inflated and accepted, JSON and
// protobuf; a coding other than gzip is refused with 415.
func TestGzipPost(t *testing.T) {
	c := startClient(t, server.Config{})
	ls := data.MustLandings()
	js, err := json.Marshal(ls)
	if err != nil {
		t.Fatal(err)
	}
	pbBody, err := proto.Marshal(data.ProtoList(ls))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ct   string
		body []byte
	}{{api.TypeJSON, js}, {api.TypeProtobuf, pbBody}} {
		resp, body := c.do(t, http.MethodPost, api.PathList, gzipBytes(t, tc.body),
			"Content-Type", tc.ct, "Accept", api.TypeJSON, "Content-Encoding", "gzip")
		wantStatus(t, resp, body, http.StatusOK)
		if strings.TrimSpace(string(body)) != `"`+data.Success+`"` {
			t.Errorf("%s: %q", tc.ct, body)
		}
		// Not gzip after all: a bad request, not a server error.
		resp, body = c.do(t, http.MethodPost, api.PathList, tc.body,
			"Content-Type", tc.ct, "Content-Encoding", "gzip")
		wantStatus(t, resp, body, http.StatusBadRequest)
	}
	resp, body := c.do(t, http.MethodPost, api.PathList, js,
		"Content-Type", api.TypeJSON, "Content-Encoding", "br")
	wantStatus(t, resp, body, http.StatusUnsupportedMediaType)
}

// TestGzipBomb: a small gzip body that inflates past MaxBody gets 413 (the
// limit is on the inflated size), on both encodings; gRPC refuses the same
// bomb with RESOURCE_EXHAUSTED; the server goes on answering.
func TestGzipBomb(t *testing.T) {
	const limit = 1 << 20
	c := startClient(t, server.Config{MaxBody: limit})
	// 16 MiB of one JSON array of spaces, about 16 KiB compressed: under
	// the limit on the wire, 16 times over it inflated.
	var raw bytes.Buffer
	raw.WriteString("[")
	raw.WriteString(strings.Repeat(" ", 16<<20))
	raw.WriteString("]")
	bomb := gzipBytes(t, raw.Bytes())
	if len(bomb) >= limit {
		t.Fatalf("the bomb is %d B compressed: not under the limit", len(bomb))
	}
	for _, ct := range []string{api.TypeJSON, api.TypeProtobuf} {
		resp, body := c.do(t, http.MethodPost, api.PathList, bomb,
			"Content-Type", ct, "Content-Encoding", "gzip")
		wantStatus(t, resp, body, http.StatusRequestEntityTooLarge)
		wantJSONError(t, resp, body, "limit")
	}
	// Just under the limit inflated is fine (an empty list, padded).
	ok := gzipBytes(t, []byte("["+strings.Repeat(" ", limit-3)+"]"))
	resp, body := c.do(t, http.MethodPost, api.PathList, ok,
		"Content-Type", api.TypeJSON, "Content-Encoding", "gzip")
	wantStatus(t, resp, body, http.StatusOK)

	big := &pb.MeteoriteLandingList{MeteoriteLandings: []*pb.MeteoriteLanding{{Name: strings.Repeat("a", 4*limit)}}}
	_, err := c.grpc.PostLargePayload(c.ctx(t), big, grpc.UseCompressor(grpcgzip.Name))
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("gRPC gzip bomb: %v, want ResourceExhausted", err)
	}
	healthy(t, c)
}

// countingConn counts the bytes a client reads from the socket.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestGzipGRPC: with grpc.UseCompressor(gzip) every data RPC answers
// (decoded by grpc-go), and the list takes far fewer bytes off the socket
// than without.
func TestGzipGRPC(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	read := func(t *testing.T, opts ...grpc.CallOption) (list, stream int64) {
		var n atomic.Int64
		cc, err := grpc.NewClient("passthrough:///"+addr,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
				conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", a)
				if err != nil {
					return nil, err
				}
				return countingConn{conn, &n}, nil
			}))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		g := pb.NewMeteoriteLandingsServiceClient(cc)
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		if v, err := g.GetVersion(ctx, &pb.EmptyRequest{}, opts...); err != nil || v.GetApiVersion() != data.Version {
			t.Fatalf("GetVersion: %v %v", v, err)
		}
		n0 := n.Load()
		l, err := g.GetLargePayloadAsList(ctx, &pb.EmptyRequest{}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		checkProtoLandings(t, "list", l.GetMeteoriteLandings())
		list = n.Load() - n0
		n0 = n.Load()
		st, err := g.GetLargePayload(ctx, &pb.EmptyRequest{}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := recvAll(st)
		if err != nil {
			t.Fatal(err)
		}
		checkProtoLandings(t, "stream", ms)
		stream = n.Load() - n0
		st2, err := g.PostLargePayload(ctx, l, opts...)
		if err != nil || st2.GetStatus() != data.Success {
			t.Fatalf("PostLargePayload: %v %v", st2, err)
		}
		return list, stream
	}
	plainList, plainStream := read(t)
	gzList, gzStream := read(t, grpc.UseCompressor(grpcgzip.Name))
	t.Logf("gRPC bytes read: list %d -> %d, stream %d -> %d", plainList, gzList, plainStream, gzStream)
	if gzList*2 > plainList {
		t.Errorf("list: %d B with gzip, %d B without: want under half", gzList, plainList)
	}
	// The stream is not asserted on: grpc-go compresses each ~100-byte
	// record on its own, and a gzip member of one record is larger than the
	// record (measured: about 10% more bytes than without).
}

// TestGzipRESTWire: the same comparison for REST, counted at the socket.
func TestGzipRESTWire(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	for _, tc := range []struct{ path, accept string }{
		{api.PathList, api.TypeJSON}, {api.PathStream, api.TypeNDJSON},
		{api.PathList, api.TypeProtobuf}, {api.PathStream, api.TypeProtobuf},
	} {
		var got [2]int64
		for i, ae := range []string{"", "Accept-Encoding: gzip\r\n"} {
			conn := dialRaw(t, addr)
			var n atomic.Int64
			cc := countingConn{conn, &n}
			if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nAccept: %s\r\n%s\r\n", tc.path, tc.accept, ae); err != nil {
				t.Fatal(err)
			}
			resp, _ := readResponse(t, cc)
			wantContentType(t, resp, tc.accept)
			got[i] = n.Load()
		}
		t.Logf("%s %s: %d B -> %d B", tc.path, tc.accept, got[0], got[1])
		if got[1]*2 > got[0] {
			t.Errorf("%s %s: %d B with gzip, %d B without: want under half", tc.path, tc.accept, got[1], got[0])
		}
	}
}
