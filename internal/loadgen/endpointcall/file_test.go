package endpointcall

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
)

const meteorService = "MeteoriteLandingsService.MeteoriteLandingsService/"

// writeFile writes name in dir with text.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// pairYAML is one pair of the file, its gRPC part's extra lines given.
func pairYAML(name, grpcExtra string) string {
	return `  - name: ` + name + `
    rest:
      url: http://127.0.0.1:1/api/MeteoriteLandings
    grpc:
      address: 127.0.0.1:1
      method: ` + meteorService + `GetVersion
` + grpcExtra
}

// A file read and loaded with the seed's .proto: pairs in order, their
// rates the traffic, REST answers typed by the gRPC output type, the
// --header and the file's metadata on the gRPC calls, no call made.
func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	schema, err := filepath.Abs("../../../api/meteor.proto")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "req.json", `{"MeteoriteLandings": [{"id": 7, "name": "x"}]}`)
	path := writeFile(t, dir, "e.yaml", "schema: "+schema+"\npairs:\n"+
		"  - name: version\n    rate: 100\n    rest:\n      url: http://127.0.0.1:1/api/MeteoriteLandings\n      headers: {X-Api-Key: k1}\n"+
		"    grpc:\n      address: 127.0.0.1:2\n      method: "+meteorService+"GetVersion\n      request: {}\n      metadata: {X-Tenant: t1}\n"+
		"  - name: upload\n    rate: 5\n    rest:\n      url: http://127.0.0.1:1/api/MeteoriteLandings/LargePayload\n      body: req.json\n"+
		"    grpc:\n      address: 127.0.0.1:2\n      method: "+meteorService+"PostLargePayload\n      request_file: req.json\n")
	f, err := ReadFile(FileSpec{Path: path, Headers: []string{"Authorization: Bearer abc", "Accept: application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	if f.Target() != "127.0.0.1:1" {
		t.Errorf("target %q", f.Target())
	}
	e, err := f.Load(context.Background(), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Traffic().String(); got != "version=100,upload=5" {
		t.Errorf("traffic %q", got)
	}
	v, up := e.Pair("version"), e.Pair("upload")
	if v == nil || up == nil || e.Pair("nope") != nil {
		t.Fatalf("pairs %v", e.Scenarios())
	}
	if up.REST.Method != "POST" || len(up.REST.Body) == 0 || up.GRPC.Request.ProtoReflect().Descriptor().FullName() != "MeteoriteLandingsService.MeteoriteLandingList" {
		t.Errorf("upload: %s, body %d B, request %v", up.REST.Method, len(up.REST.Body), up.GRPC.Request)
	}
	md := v.GRPC.Metadata
	if md.Get("authorization")[0] != "Bearer abc" || md.Get("x-tenant")[0] != "t1" || len(md.Get("accept")) != 0 {
		t.Errorf("metadata %v: want --header's and the file's, not Accept", md)
	}
	if v.REST.Header.Get("X-Api-Key") != "k1" || v.REST.Header.Get("Authorization") != "Bearer abc" {
		t.Errorf("REST headers %v", v.REST.Header)
	}
	for _, p := range e.Pairs {
		if p.Decoding(api.GRPC) != results.DecodeCompiled || p.Decoding(api.REST) != results.DecodeTypedJSON {
			t.Errorf("%s decodes %s / %s: want compiled, typed", p.Name, p.Decoding(api.GRPC), p.Decoding(api.REST))
		}
	}
	if got := e.Name(results.MixScenario); got != "e.yaml" {
		t.Errorf("a mix's endpoints are named %q, want the file's name", got)
	}
}

// Bad files: one line naming the flag, the file and the JSON path of the
// fault, before any call.
func TestLoadFileBadInput(t *testing.T) {
	dir := t.TempDir()
	schema, err := filepath.Abs("../../../api/meteor.proto")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "bad-req.json", `{"nope": 1}`)
	for name, tc := range map[string]struct{ text, want string }{
		"duplicate name":   {"pairs:\n" + pairYAML("a", "") + pairYAML("a", ""), `$.pairs[1].name: "a" is pairs[0]'s name too`},
		"unknown field":    {"pairs:\n" + pairYAML("a", "      metdata: {k: v}\n"), "$.pairs[0].grpc.metdata: unknown field"},
		"unknown top":      {"pair: []\n", "$.pair: unknown field"},
		"wrong type":       {"pairs:\n" + pairYAML("a", "") + "    rate: fast\n", "$.pairs[0].rate: a string where a number is wanted"},
		"no pairs":         {"pairs: []\n", "$.pairs: no pair"},
		"no grpc":          {"pairs:\n  - name: a\n    rest: {url: http://h:1/}\n", "$.pairs[0]: a pair is a REST request (rest) and a gRPC call (grpc)"},
		"contract name":    {"pairs:\n" + pairYAML("large", ""), `$.pairs[0].name: "large" is a scenario of meteorbench's own contract`},
		"bad name":         {"pairs:\n" + pairYAML("a=b", ""), `$.pairs[0].name: "a=b": want letters`},
		"some rates":       {"pairs:\n" + pairYAML("a", "") + "    rate: 5\n" + pairYAML("b", ""), "$.pairs[1].rate: missing"},
		"bad url":          {"pairs:\n  - name: a\n    rest: {url: 'h:1/x'}\n    grpc: {address: 'h:1', method: p.S/M}\n", `$.pairs[0].rest.url "h:1/x": want http://`},
		"missing method":   {"schema: " + schema + "\npairs:\n  - name: a\n    rest: {url: 'http://h:1/'}\n    grpc: {address: 'h:1', method: " + meteorService + "Nope}\n", "$.pairs[0].grpc.method \"" + meteorService + "Nope\": service MeteoriteLandingsService.MeteoriteLandingsService has no method Nope"},
		"request file":     {"schema: " + schema + "\npairs:\n" + pairYAML("a", "      request_file: bad-req.json\n"), "$.pairs[0].grpc.request_file " + filepath.Join(dir, "bad-req.json") + ": not a MeteoriteLandingsService.EmptyRequest in protobuf JSON"},
		"inline request":   {"schema: " + schema + "\npairs:\n" + pairYAML("a", "      request: {nope: 1}\n"), "$.pairs[0].grpc.request: not a MeteoriteLandingsService.EmptyRequest in protobuf JSON"},
		"both requests":    {"schema: " + schema + "\npairs:\n" + pairYAML("a", "      request: {}\n      request_file: bad-req.json\n"), "$.pairs[0].grpc: request and request_file are exclusive"},
		"reserved md":      {"pairs:\n" + pairYAML("a", "      metadata: {Content-Type: x}\n"), `$.pairs[0].grpc.metadata: "Content-Type": not a metadata key`},
		"not yaml":         {"pairs: [\n", "$: not YAML"},
		"duplicate key":    {"pairs:\n" + pairYAML("a", "") + "    rate: 1\n    rate: 2\n", "$: not YAML"},
		"missing schema":   {"schema: /does/not/exist.proto\npairs:\n" + pairYAML("a", ""), "$.schema /does/not/exist.proto:"},
		"missing body":     {"pairs:\n  - name: a\n    rest: {url: 'http://h:1/', body: nope.json}\n    grpc: {address: 'h:1', method: p.S/M}\n", "$.pairs[0].rest.body: open"},
		"bad grpc address": {"pairs:\n  - name: a\n    rest: {url: 'http://h:1/'}\n    grpc: {address: 'h', method: p.S/M}\n", `$.pairs[0].grpc.address "h": want host:port`},
	} {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, dir, "e.yaml", tc.text)
			f, err := ReadFile(FileSpec{Path: path})
			if err == nil {
				_, err = f.Load(context.Background(), nil, "")
			}
			t.Log(err)
			prefix := "--endpoints " + path + ": "
			if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v\nwant one line starting %q containing %q", err, prefix, tc.want)
			}
		})
	}
	// JSON files too, by their extension.
	path := writeFile(t, dir, "e.json", `{"pairs": [{"name": "a", "rest": {"url": "http://h:1/"}, "grpc": {"address": "h:1", "method": "p.S/M", "metadta": {}}}]}`)
	if _, err := ReadFile(FileSpec{Path: path}); err == nil || !strings.Contains(err.Error(), "$.pairs[0].grpc.metadta: unknown field") {
		t.Errorf("JSON: %v", err)
	}
}
