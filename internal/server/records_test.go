package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

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
	if testing.Short() {
		t.Skip("encodes 100,000 records several times")
	}
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
