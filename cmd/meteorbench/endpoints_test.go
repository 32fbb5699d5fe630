package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// startPlainHTTP is a plain net/http server, nothing of meteorbench's: GET
// /items answers a JSON array, POST /echo answers its body when the
// request carries X-Test: yes, GET /text answers text.
func startPlainHTTP(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items", func(w http.ResponseWriter, _ *http.Request) {
		items := make([]map[string]any, 50)
		for i := range items {
			items[i] = map[string]any{"id": i, "name": "item", "price": 1.5 * float64(i)}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(items)
	})
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test") != "yes" {
			http.Error(w, "no X-Test header", http.StatusBadRequest)
			return
		}
		io.Copy(w, r.Body)
	})
	mux.HandleFunc("GET /text", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "not json") })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// startPlainGRPC is a plain grpc-go server with the health service and
// server reflection, nothing of meteorbench's.
func startPlainGRPC(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	reflection.Register(gs)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

// runEndpoints runs `run` with args, quick and bounded, and returns its
// JSON result.
func runEndpoints(t *testing.T, args ...string) *results.Result {
	t.Helper()
	args = append([]string{"run", "--batch", "2", "--iterations", "3", "--warmup", "0", "--format", "json", "--quiet"}, args...)
	stdout, stderr, err := execute(t, args...)
	if err := unlessSuspect(t, err); err != nil {
		t.Fatalf("run %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	res, err := results.Read(strings.NewReader(stdout))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Two external endpoints, started here, measured side by side: a plain
// net/http server and a plain grpc-go server described by its reflection.
func TestRunExternalEndpoints(t *testing.T) {
	rest, grpcAddr := startPlainHTTP(t), startPlainGRPC(t)
	body := writeTemp(t, "body.json", `{"hello": [1, 2, 3]}`)
	req := writeTemp(t, "req.json", `{"service": ""}`)
	res := runEndpoints(t, "--rest-url", "http://"+rest+"/echo", "--rest-body", body, "--header", "X-Test: yes",
		"--grpc-addr", grpcAddr, "--grpc-method", "grpc.health.v1.Health/Check", "--grpc-request", req,
		"--link", "lan") // each side relayed to its own server
	name := "POST http://" + rest + "/echo vs grpc.health.v1.Health/Check at " + grpcAddr
	if len(res.Cells) != 2 {
		t.Fatalf("%d cells, want rest and grpc", len(res.Cells))
	}
	for i, p := range []api.Protocol{api.REST, api.GRPC} {
		c := res.Cells[i]
		if c.Protocol != p || c.Scenario != "endpoint" || c.Endpoint != name || c.Link == "" || c.Calls != 6 || c.Errors != 0 {
			t.Errorf("cell %d: %s %s %q: %d calls, %d errors %v", i, c.Scenario, c.Protocol, c.Endpoint, c.Calls, c.Errors, c.ErrorExamples)
		}
		if c.ServerCPUUSPerCall != nil {
			t.Errorf("%s: server CPU per call %v from a server without meteorbench's metrics: want none", p, *c.ServerCPUUSPerCall)
		}
		if c.BytesPerCall.Sent == 0 || c.BytesPerCall.Received == 0 || c.DecodeUS == nil {
			t.Errorf("%s: bytes %+v, decode %v: counted and timed like any call", p, c.BytesPerCall, c.DecodeUS)
		}
	}
	if len(res.Verdicts) != 1 || res.Verdicts[0].Condition.Endpoint != name || !strings.Contains(res.Verdicts[0].Summary, name) {
		t.Errorf("verdicts %+v: want one, naming the endpoints", res.Verdicts)
	}

	// A 2xx that is not JSON is an invalid response: refused by the probe
	// before measuring, saying so.
	_, _, err := execute(t, "run", "--rest-url", "http://"+rest+"/text", "--iterations", "1", "--quiet")
	if exitCodeQuiet(err) != 1 || !strings.Contains(err.Error(), "answered no probe call correctly: endpoint rest: invalid-response: answer is not JSON") {
		t.Errorf("a text answer: %v", err)
	}
}

// originalProto writes the original experiment's MeteoriteLandings.proto,
// as its clients know it: api/meteor.proto without its two additions,
// go_package and `optional` (neither changes the wire format).
func originalProto(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../api/meteor.proto")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "option go_package") {
			lines = append(lines, strings.Replace(l, "  optional ", "  ", 1))
		}
	}
	return writeTemp(t, "MeteoriteLandings.proto", strings.Join(lines, "\n"))
}

// The seed contract as a user's own service: meteorbench's server, its
// gRPC method described by the original experiment's .proto (--schema,
// parsed at run time), its REST route by URL; the server's metrics give
// both sides' CPU per call.
func TestRunEndpointsWithSchema(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	res := runEndpoints(t, "--rest-url", "http://"+addr+api.PathList,
		"--grpc-addr", addr, "--grpc-method", "MeteoriteLandingsService.MeteoriteLandingsService/GetLargePayloadAsList",
		"--schema", originalProto(t))
	if len(res.Cells) != 2 {
		t.Fatalf("%d cells", len(res.Cells))
	}
	for _, c := range res.Cells {
		if c.Calls != 6 || c.Errors != 0 || c.ServerCPUUSPerCall == nil {
			t.Errorf("%s: %d calls, %d errors %v, server CPU %v", c.Protocol, c.Calls, c.Errors, c.ErrorExamples, c.ServerCPUUSPerCall)
		}
		if c.BytesPerCall.Received < 90_000 {
			t.Errorf("%s: %.0f B received per call: not the 1000 records", c.Protocol, c.BytesPerCall.Received)
		}
	}
	// A streaming method, by the server's reflection.
	res = runEndpoints(t, "--grpc-addr", addr, "--grpc-method", "MeteoriteLandingsService.MeteoriteLandingsService/GetLargePayload")
	if c := res.Cells[0]; c.Calls != 6 || c.FirstRecordUS == nil {
		t.Errorf("stream: %d calls %v, first record %v", c.Calls, c.ErrorExamples, c.FirstRecordUS)
	}
}

// Bad endpoint input: one line, exit 2, before any call.
func TestRunEndpointsBadInput(t *testing.T) {
	grpcAddr := startPlainGRPC(t)
	schema := originalProto(t)
	method := "MeteoriteLandingsService.MeteoriteLandingsService/GetVersion"
	bad := writeTemp(t, "bad.json", `{"nope": 1}`)
	badProto := writeTemp(t, "bad.proto", "syntax = \"proto3\";\nmessage {")
	for _, args := range [][]string{
		{"--rest-url", "127.0.0.1:8080/items"},                                                                                        // no scheme
		{"--rest-url", "http://127.0.0.1:1/x", "--header", "no colon"},                                                                // bad header
		{"--rest-url", "http://127.0.0.1:1/x", "--rest-body", "/does/not/exist.json"},                                                 // unreadable body
		{"--grpc-addr", "127.0.0.1:1", "--grpc-method", method, "--schema", "/does/not/exist.proto"},                                  // unreadable schema
		{"--grpc-addr", "127.0.0.1:1", "--grpc-method", method, "--schema", badProto},                                                 // schema that does not parse
		{"--grpc-addr", "127.0.0.1:1", "--grpc-method", "MeteoriteLandingsService.MeteoriteLandingsService/Nope", "--schema", schema}, // unknown method
		{"--grpc-addr", "127.0.0.1:1", "--grpc-method", "no.Such/Service", "--schema", schema},                                        // unknown service
		{"--grpc-addr", "127.0.0.1:1", "--grpc-method", "NoSlash", "--schema", schema},                                                // not Service/Method
		{"--grpc-addr", "127.0.0.1:1", "--grpc-method", method, "--schema", schema, "--grpc-request", bad},                            // bad request JSON
		{"--grpc-addr", grpcAddr, "--grpc-method", "grpc.health.v1.Health/Nope"},                                                      // unknown method, by reflection
		{"--grpc-method", method}, // no address
		{"--target", "127.0.0.1:1", "--rest-url", "http://127.0.0.1:1/x"}, // exclusive
		{"--rest-url", "http://127.0.0.1:1/x", "--scenario", "small"},     // the contract's
		{"--schema", schema}, // nothing to describe
	} {
		wantUsageError(t, append([]string{"run"}, args...)...)
	}
}

// An https URL and a gRPC method over TLS, as --tls measures them: the
// handshakes counted, the certificate not verified (--tls-insecure).
func TestRunEndpointsTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"ok": true}`)
	}))
	t.Cleanup(srv.Close)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.Creds(credentials.NewServerTLSFromCert(&srv.TLS.Certificates[0])))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	reflection.Register(gs)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	res := runEndpoints(t, "--rest-url", srv.URL+"/x", "--grpc-addr", lis.Addr().String(),
		"--grpc-method", "grpc.health.v1.Health/Check", "--tls", "--tls-insecure")
	for _, c := range res.Cells {
		if c.Calls != 6 || !c.TLS || c.TLSHandshakeUS == nil {
			t.Errorf("%s: %d calls %v, TLS %v, handshake %v", c.Protocol, c.Calls, c.ErrorExamples, c.TLS, c.TLSHandshakeUS)
		}
	}
	wantUsageError(t, "run", "--rest-url", "http://"+srv.Listener.Addr().String(), "--tls", "--tls-insecure") // TLS to an http:// URL
}

// exampleEndpoints is examples/endpoints/meteorbench-serve.yaml pointed at
// addr, its files by absolute path: the example a user runs as is.
func exampleEndpoints(t *testing.T, addr string) string {
	t.Helper()
	dir, err := filepath.Abs("../../examples/endpoints")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "meteorbench-serve.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("127.0.0.1:8080", addr,
		"schema: ../../api/meteor.proto", "schema: "+filepath.Join(dir, "../../api/meteor.proto"),
		"body: upload.json", "body: "+filepath.Join(dir, "upload.json"),
		"request_file: upload-grpc.json", "request_file: "+filepath.Join(dir, "upload-grpc.json")).Replace(string(b))
	return writeTemp(t, "endpoints.yaml", text)
}

// The example endpoints file against meteorbench's server: its three
// pairs, with the file's rates, run as one mix (a cell per protocol with
// each pair's rate and latency, answers decoded into typed values), and
// fit --from answers from that document for traffic of those pairs. With
// --iterations the pairs are measured one by one: a verdict per pair.
func TestRunEndpointsFile(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	file := exampleEndpoints(t, addr)
	doc := filepath.Join(t.TempDir(), "mix.json")
	_, stderr, err := execute(t, "run", "--endpoints", file, "--duration", "1s", "--warmup", "0", "--repeat", "1",
		"--format", "json", "--out", doc, "--quiet")
	// (A mix cell judged suspect beside CI's other tests: its figures are
	// still what this test reads.)
	if err := unlessSuspect(t, err); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	res, err := results.Read(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 2 {
		t.Fatalf("%d cells, want a mix cell per protocol", len(res.Cells))
	}
	wantDecoding := map[api.Protocol]results.Decoding{api.REST: results.DecodeTypedJSON, api.GRPC: results.DecodeCompiled}
	for _, c := range res.Cells {
		if c.Scenario != results.MixScenario || c.Mix == nil || c.Errors != 0 || c.Calls == 0 || c.ServerCPUUSPerCall == nil {
			t.Errorf("%s %s: mix %q, %d calls, %d errors %v, server CPU %v", c.Scenario, c.Protocol, c.Condition.Mix, c.Calls, c.Errors, c.ErrorExamples, c.ServerCPUUSPerCall)
		}
		if c.ClientDecoding != wantDecoding[c.Protocol] {
			t.Errorf("%s decoded %q, want %q", c.Protocol, c.ClientDecoding, wantDecoding[c.Protocol])
		}
		var names []string
		for _, m := range c.Mix {
			names = append(names, string(m.Scenario))
			if m.Calls == 0 || m.Errors != 0 {
				t.Errorf("%s %s: %d calls, %d errors", c.Protocol, m.Scenario, m.Calls, m.Errors)
			}
		}
		if strings.Join(names, ",") != "version,list,upload" || c.Condition.Mix != "version=200,list=20,upload=5" {
			t.Errorf("%s: mix %q of %v", c.Protocol, c.Condition.Mix, names)
		}
	}
	if len(res.Verdicts) != 1 || !strings.Contains(res.Verdicts[0].Summary, "endpoints.yaml") || strings.Contains(res.Verdicts[0].Summary, "generic") {
		t.Errorf("verdicts %+v: want one, naming the file, typed decoding on both sides", res.Verdicts)
	}
	for _, w := range res.Warnings {
		if strings.Contains(w, "dynamicpb") || strings.Contains(w, "generic") {
			t.Errorf("warning %q: the answers decode into typed values", w)
		}
	}
	out, stderr, err := execute(t, "fit", "--from", doc, "--tier", "1cpu/100mbit", "--traffic", "version=400,list=40,upload=10")
	if err != nil {
		t.Fatalf("fit --from: %v\n%s", err, stderr)
	}
	for _, want := range []string{"traffic version=400,list=40,upload=10", "REST needs", "gRPC needs"} {
		if !strings.Contains(out, want) {
			t.Errorf("fit --from: no %q in\n%s", want, out)
		}
	}

	// --mix over the pairs overrides the file's rates; a name no pair has
	// is a usage error.
	wantUsageError(t, "run", "--endpoints", file, "--mix", "version=10,nope=1")

	res = runEndpoints(t, "--endpoints", file)
	if len(res.Cells) != 6 || len(res.Verdicts) != 3 {
		t.Fatalf("%d cells, %d verdicts: want a cell per pair and protocol, a verdict per pair", len(res.Cells), len(res.Verdicts))
	}
	for i, name := range []string{"version", "list", "upload"} {
		v := res.Verdicts[i]
		if string(v.Scenario) != name || !strings.HasPrefix(v.Summary, name+" · ") || !strings.Contains(v.Summary, "http://"+addr) {
			t.Errorf("verdict %d: %s %q", i, v.Scenario, v.Summary)
		}
	}
	for _, c := range res.Cells {
		if c.Calls != 6 || c.Errors != 0 {
			t.Errorf("%s %s: %d calls, %d errors %v", c.Scenario, c.Protocol, c.Calls, c.Errors, c.ErrorExamples)
		}
	}
}

// Bad endpoints files and flags beside them: one line, exit 2, before any
// call (the file's own faults are endpointcall's TestLoadFileBadInput).
func TestRunEndpointsFileBadInput(t *testing.T) {
	file := exampleEndpoints(t, "127.0.0.1:1")
	dup := writeTemp(t, "dup.yaml", "pairs:\n"+strings.Repeat("  - name: a\n    rest: {url: 'http://127.0.0.1:1/'}\n    grpc: {address: '127.0.0.1:1', method: p.S/M}\n", 2))
	for _, args := range [][]string{
		{"--endpoints", dup},
		{"--endpoints", "/does/not/exist.yaml"},
		{"--endpoints", file, "--rest-url", "http://127.0.0.1:1/x"},
		{"--endpoints", file, "--target", "127.0.0.1:1"},
		{"--endpoints", file, "--scenario", "small"},
		{"--endpoints", file, "--mix", "small=1"},
	} {
		wantUsageError(t, append([]string{"run"}, args...)...)
	}
}

// startAuthGRPC is a plain grpc-go server whose every call must carry
// metadata x-api-key: secret, with the health service.
func startAuthGRPC(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if md, _ := metadata.FromIncomingContext(ctx); len(md.Get("x-api-key")) != 1 || md.Get("x-api-key")[0] != "secret" {
			return nil, status.Error(codes.Unauthenticated, "no x-api-key")
		}
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

// --header goes to gRPC as metadata too, as an endpoints file's metadata
// does: a server that wants an API key answers only with it.
func TestRunEndpointsGRPCMetadata(t *testing.T) {
	addr := startAuthGRPC(t)
	schema := writeTemp(t, "health.proto", `syntax = "proto3";
package grpc.health.v1;
message HealthCheckRequest { string service = 1; }
message HealthCheckResponse { int32 status = 1; }
service Health { rpc Check(HealthCheckRequest) returns (HealthCheckResponse); }
`)
	method := "grpc.health.v1.Health/Check"
	res := runEndpoints(t, "--grpc-addr", addr, "--grpc-method", method, "--schema", schema, "--header", "X-Api-Key: secret")
	if c := res.Cells[0]; c.Calls != 6 || c.Errors != 0 || c.ClientDecoding != results.DecodeCompiled {
		t.Errorf("with --header: %d calls, %d errors %v, decoded %q", c.Calls, c.Errors, c.ErrorExamples, c.ClientDecoding)
	}
	_, _, err := execute(t, "run", "--grpc-addr", addr, "--grpc-method", method, "--schema", schema, "--iterations", "1", "--quiet")
	if err == nil || !strings.Contains(err.Error(), "no x-api-key") {
		t.Errorf("without the key: %v", err)
	}
	rest := startPlainHTTP(t)
	file := writeTemp(t, "e.yaml", "schema: "+schema+"\npairs:\n  - name: health\n    rest: {url: 'http://"+rest+"/items'}\n"+
		"    grpc: {address: '"+addr+"', method: "+method+", metadata: {X-Api-Key: secret}}\n")
	res = runEndpoints(t, "--endpoints", file)
	for _, c := range res.Cells {
		if c.Calls != 6 || c.Errors != 0 {
			t.Errorf("file metadata: %s %d calls, %d errors %v", c.Protocol, c.Calls, c.Errors, c.ErrorExamples)
		}
	}
	// /items answers an array of objects, not a HealthCheckResponse: the
	// REST side decodes generically, and the verdict line says so.
	if c := res.Cells[0]; c.Protocol != api.REST || c.ClientDecoding != results.DecodeGenericJSON {
		t.Errorf("%s decoded %q, want generic JSON", c.Protocol, c.ClientDecoding)
	}
	if s := res.Verdicts[0].Summary; !strings.Contains(s, "REST decoded generic JSON values (the answer (an array) is not the JSON of a grpc.health.v1.HealthCheckResponse)") {
		t.Errorf("verdict %q: does not say REST decoded generically, and why", s)
	}
}

// The endpoint mode's gRPC client decodes the 1000 records (a method found
// at run time, from the .proto) about as fast as the contract mode's
// generated client, against the same server, the two runs interleaved:
// within 1.5x at the median decode time per call. Timing-dependent (wall
// time on a shared machine): up to three attempts, each one's figures
// logged.
func TestEndpointDecodeNearGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("timing: compares decode wall time (the race detector's -short step slows the two codecs unequally); runs in the normal step")
	}
	addr := servertest.Start(t, server.Config{})
	method := "MeteoriteLandingsService." + "MeteoriteLandingsService/GetLargePayloadAsList"
	decode := func(args ...string) float64 {
		res := runEndpoints(t, append([]string{"--iterations", "30"}, args...)...)
		c := res.Cells[0]
		if c.Calls != 60 || c.DecodeUS == nil {
			t.Fatalf("%s: %d calls %v, decode %v", c.Protocol, c.Calls, c.ErrorExamples, c.DecodeUS)
		}
		return c.DecodeUS.P50
	}
	const within = 1.5
	var ratios []float64
	for attempt := 1; attempt <= 3; attempt++ {
		generated := decode("--target", addr, "--proto", "grpc", "--scenario", "large")
		compiled := decode("--grpc-addr", addr, "--grpc-method", method, "--schema", "../../api/meteor.proto")
		ratios = append(ratios, compiled/generated)
		t.Logf("attempt %d: decode p50 per call: generated %.0f µs, compiled (endpoint) %.0f µs: %.2fx", attempt, generated, compiled, compiled/generated)
		if compiled <= within*generated {
			return
		}
	}
	t.Errorf("the endpoint's compiled decode was over %.1fx generated code's in three attempts: %.2f", within, ratios)
}
