package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/payload/payloadtest"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// shapes are the payloads made for the repository; real are the real API
// responses kept beside them (examples/payloads/SOURCE.md).
var (
	shapes = []string{"text-heavy", "number-heavy", "nested"}
	real   = []string{"twitter-search.json.gz", "fhir-bundle.json.gz"}
)

func shapeFile(name string) string {
	if filepath.Ext(name) == "" {
		name += ".json"
	}
	return filepath.Join("..", "..", "examples", "payloads", name)
}

// The schema derived for each kept shape compiles with protoc.
func TestSchemaCompilesWithProtoc(t *testing.T) {
	protoc := tool(t, "protoc", "apt-get install protobuf-compiler")
	var include string
	for _, dir := range []string{"/usr/include", "/usr/local/include"} {
		if _, err := os.Stat(filepath.Join(dir, "google", "protobuf", "timestamp.proto")); err == nil {
			include = dir
		}
	}
	if include == "" {
		t.Skip("protoc found, but not google/protobuf/timestamp.proto: install libprotobuf-dev")
	}
	// Keys protoc would refuse as field names, or whose default JSON names
	// collide (fooBar, foo_bar; Geo, geo), beside the kept shapes.
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, []byte(`{"fooBar":1,"foo_bar":2,"a b":3,"a_b":4,"2x":true,"@id":"x","id":"y","Geo":{"q":1},"geo":{"r":[1,2]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range append(append(shapes, real...), "keys") {
		t.Run(name, func(t *testing.T) {
			file := shapeFile(name)
			if name == "keys" {
				file = keys
			}
			d, err := payload.Derive(file, "")
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, name+".proto"), []byte(d.Proto), 0o644); err != nil {
				t.Fatal(err)
			}
			runTool(t, protoc, "-I", dir, "-I", include, "--descriptor_set_out", os.DevNull, name+".proto")
		})
	}
}

// grpcurl lists the payload's service by reflection, describes its item
// and calls it: the answers are the sample's items.
func TestGrpcurlByReflection(t *testing.T) {
	grpcurl := tool(t, "grpcurl", "go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4")
	for _, name := range shapes {
		t.Run(name, func(t *testing.T) {
			p := payloadtest.Load(t, shapeFile(name), payload.Options{})
			addr := servertest.Start(t, server.Config{Payload: p})
			run := func(args ...string) string {
				t.Helper()
				return runTool(t, grpcurl, append([]string{"-plaintext"}, args...)...)
			}
			if out := run(addr, "list"); !strings.Contains(out, payload.ServiceName+"\n") {
				t.Errorf("list: %s", out)
			}
			if out := run(addr, "describe", string(p.Item())); !strings.Contains(out, "message Item {") {
				t.Errorf("describe: %s", out)
			}
			out := run("-H", "meteorbench-records: 3", addr, payload.ServiceName+"/GetLargePayloadAsList")
			var list struct{ Items []map[string]any }
			if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Items) != 3 {
				t.Fatalf("GetLargePayloadAsList: %d items, %v\n%s", len(list.Items), err, out)
			}
			var sample []map[string]any
			b, _ := os.ReadFile(shapeFile(name))
			_ = json.Unmarshal(b, &sample)
			for k, v := range sample[0] {
				if v == 0.0 || v == false || v == "" { // the protobuf JSON mapping leaves zero values out
					continue
				}
				if _, ok := list.Items[0][k]; !ok {
					t.Errorf("item 0 lacks the sample's key %q", k)
				}
			}
			if out := run("-d", `{"items": [{}]}`, addr, payload.ServiceName+"/PostLargePayload"); !strings.Contains(out, `"SUCCESS"`) {
				t.Errorf("PostLargePayload: %s", out)
			}
		})
	}
}
