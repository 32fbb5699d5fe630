package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/server"
)

// TestMetricsCountExactly makes a known set of calls on every protocol and
// checks that the counters moved by exactly those calls, and nothing else.
func TestMetricsCountExactly(t *testing.T) {
	const token = "s3cret"
	c := startClient(t, server.Config{Token: token})
	anon := newClient(t, c.addr, "")

	before := scrape(t, c)
	// Every label set exists from the start, at zero.
	for _, p := range api.DefaultProtocols() {
		for _, m := range []string{"GetVersion", "GetLargePayloadAsList", "GetLargePayload", "PostLargePayload"} {
			for _, name := range []string{api.MetricRequests, api.MetricErrors} {
				k := counterKey(name, string(p), m)
				if v, ok := before[k]; !ok || v != 0 {
					t.Errorf("before any call: %s = %v (present %v), want 0", k, v, ok)
				}
			}
		}
	}

	want := map[string]float64{}
	call := func(metric, protocol, method string) { want[counterKey(metric, protocol, method)]++ }

	jsonBody, _ := json.Marshal(data.MustLandings()[:10])
	protoBody, _ := proto.Marshal(data.ProtoList(data.MustLandings()[:10]))
	pbAccept := []string{"Accept", api.TypeProtobuf}

	// REST JSON: 3 GetVersion, 2 lists, 1 stream, 2 posts of which 1 fails.
	for range 3 {
		c.do(t, http.MethodGet, api.PathVersion, nil)
		call(api.MetricRequests, "rest", "GetVersion")
	}
	for range 2 {
		c.do(t, http.MethodGet, api.PathList, nil)
		call(api.MetricRequests, "rest", "GetLargePayloadAsList")
	}
	c.do(t, http.MethodGet, api.PathStream, nil)
	call(api.MetricRequests, "rest", "GetLargePayload")
	c.do(t, http.MethodPost, api.PathList, jsonBody, "Content-Type", "application/json")
	call(api.MetricRequests, "rest", "PostLargePayload")
	if resp, _ := c.do(t, http.MethodPost, api.PathList, []byte("[{"), "Content-Type", "application/json"); resp.StatusCode != 400 {
		t.Fatalf("bad JSON: %s", resp.Status)
	}
	call(api.MetricRequests, "rest", "PostLargePayload")
	call(api.MetricErrors, "rest", "PostLargePayload")
	// A wrong Content-Type reached the handler and failed.
	c.do(t, http.MethodPost, api.PathList, jsonBody, "Content-Type", "text/plain")
	call(api.MetricRequests, "rest", "PostLargePayload")
	call(api.MetricErrors, "rest", "PostLargePayload")

	// REST protobuf: 1 of each, plus a failed post.
	c.do(t, http.MethodGet, api.PathVersion, nil, pbAccept...)
	call(api.MetricRequests, "rest-protobuf", "GetVersion")
	c.do(t, http.MethodGet, api.PathList, nil, pbAccept...)
	call(api.MetricRequests, "rest-protobuf", "GetLargePayloadAsList")
	c.do(t, http.MethodGet, api.PathStream, nil, pbAccept...)
	call(api.MetricRequests, "rest-protobuf", "GetLargePayload")
	c.do(t, http.MethodPost, api.PathList, protoBody, "Content-Type", api.TypeProtobuf)
	call(api.MetricRequests, "rest-protobuf", "PostLargePayload")
	c.do(t, http.MethodPost, api.PathList, []byte{0xff, 0xff}, "Content-Type", api.TypeProtobuf)
	call(api.MetricRequests, "rest-protobuf", "PostLargePayload")
	call(api.MetricErrors, "rest-protobuf", "PostLargePayload")

	// gRPC: 2 GetVersion, 1 list, 1 stream, 1 post, 1 failed post.
	for range 2 {
		if _, err := c.grpc.GetVersion(c.ctx(t), &pb.EmptyRequest{}); err != nil {
			t.Fatal(err)
		}
		call(api.MetricRequests, "grpc", "GetVersion")
	}
	if _, err := c.grpc.GetLargePayloadAsList(c.ctx(t), &pb.EmptyRequest{}); err != nil {
		t.Fatal(err)
	}
	call(api.MetricRequests, "grpc", "GetLargePayloadAsList")
	stream, err := c.grpc.GetLargePayload(c.ctx(t), &pb.EmptyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recvAll(stream); err != nil {
		t.Fatal(err)
	}
	call(api.MetricRequests, "grpc", "GetLargePayload")
	if _, err := c.grpc.PostLargePayload(c.ctx(t), data.ProtoList(data.MustLandings()[:10])); err != nil {
		t.Fatal(err)
	}
	call(api.MetricRequests, "grpc", "PostLargePayload")
	bad := data.ProtoList(data.MustLandings()[:1])
	bad.MeteoriteLandings[0].Year.Nanos = 2e9
	if _, err := c.grpc.PostLargePayload(c.ctx(t), bad); err == nil {
		t.Fatal("bad timestamp accepted")
	}
	call(api.MetricRequests, "grpc", "PostLargePayload")
	call(api.MetricErrors, "grpc", "PostLargePayload")

	// Not counted: unauthenticated calls, unknown paths, wrong methods,
	// health, metrics.
	anon.do(t, http.MethodGet, api.PathVersion, nil)
	if _, err := anon.grpc.GetVersion(anon.ctx(t), &pb.EmptyRequest{}); err == nil {
		t.Fatal("gRPC call without the token succeeded")
	}
	c.do(t, http.MethodGet, "/nope", nil)
	c.do(t, http.MethodDelete, api.PathVersion, nil)
	c.do(t, http.MethodGet, api.PathHealth, nil)

	// Every rest call above went without jsoncodec.Header: served with std.
	for _, m := range []string{"GetVersion", "GetLargePayloadAsList", "GetLargePayload", "PostLargePayload"} {
		want[api.MetricJSONCodec+`{codec="std"}`] += want[counterKey(api.MetricRequests, "rest", m)]
	}

	after := scrape(t, c)
	for k, v := range after {
		if k == api.MetricCPU+"{}" || strings.HasPrefix(k, api.MetricBuildInfo+"{") {
			continue
		}
		// What is open now: the anonymous client's connections, each
		// charged to the memory budget (TestMaxConns checks them); and the
		// test process's peak RSS, which the calls may raise.
		if k == "meteorbench_connections_open{}" || k == "meteorbench_memory_budget_used_bytes{}" || k == "meteorbench_peak_rss_bytes{}" {
			continue
		}
		if d := v - before[k]; d != want[k] {
			t.Errorf("%s moved by %v, want %v", k, d, want[k])
		}
	}
	for k := range want {
		if _, ok := after[k]; !ok {
			t.Errorf("%s missing from /metrics", k)
		}
	}
	if cpu := after[api.MetricCPU+"{}"]; cpu <= before[api.MetricCPU+"{}"] {
		t.Errorf("%s did not advance across the calls: %v -> %v", api.MetricCPU, before[api.MetricCPU+"{}"], cpu)
	}
}

// TestMetricsExposition: the build info and the standard collectors are there.
func TestMetricsExposition(t *testing.T) {
	c := startClient(t, server.Config{})
	resp, body := c.do(t, http.MethodGet, api.PathMetrics, nil)
	wantStatus(t, resp, body, http.StatusOK)
	for _, want := range []string{
		"meteorbench_build_info{", `go_version="go`, `grpc_version="`,
		"go_goroutines ", "process_cpu_seconds_total ", api.MetricCPU + " ",
	} {
		if !containsLine(body, want) {
			t.Errorf("/metrics has no line with %q", want)
		}
	}
	m := scrape(t, c)
	found := false
	for k, v := range m {
		if strings.HasPrefix(k, api.MetricBuildInfo+"{") {
			found = true
			if v != 1 {
				t.Errorf("%s = %v, want 1", k, v)
			}
		}
	}
	if !found {
		t.Error("no build_info sample")
	}
}

func containsLine(body []byte, s string) bool {
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "#") && strings.Contains(line, s) {
			return true
		}
	}
	return false
}
