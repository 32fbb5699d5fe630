package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
)

// A shop's own API in another language (testdata/shop_server.py: Python's
// http.server and grpcio, JSON by protobuf's json_format), whose schema has
// maps (of strings, of messages), a oneof, a recursive message, an enum, a
// Timestamp, a proto3 optional and 64-bit integers written as strings, the
// order under its .proto field names (card_last4, tracking_ids): both
// pairs of its endpoints file decode compiled on gRPC and typed JSON on
// REST, no errors, and --server-pid rest=P,grpc=P (the one process serving
// both) reads the server's CPU.
func TestEndpointsAgainstPythonShop(t *testing.T) {
	if out, err := exec.Command(debianPython, "-c", "import grpc, google.protobuf").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import grpc and google.protobuf (install python3-grpcio python3-protobuf; .ci/run does): %v %s", debianPython, err, strings.TrimSpace(string(out)))
	}
	schema, err := filepath.Abs("testdata/shop/shop.proto")
	if err != nil {
		t.Fatal(err)
	}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{filepath.Dir(schema)}})}
	files, err := c.Compile(context.Background(), "shop.proto")
	if err != nil {
		t.Fatal(err)
	}
	fds := &descriptorpb.FileDescriptorSet{}
	imps := files[0].Imports()
	for i := range imps.Len() {
		fds.File = append(fds.File, protodesc.ToFileDescriptorProto(imps.Get(i).FileDescriptor))
	}
	fds.File = append(fds.File, protodesc.ToFileDescriptorProto(protoreflect.FileDescriptor(files[0])))
	b, err := proto.Marshal(fds)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	desc := filepath.Join(dir, "shop.pb")
	if err := os.WriteFile(desc, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(debianPython, "testdata/shop_server.py", desc)
	cmd.Stderr = os.Stderr
	line := startScript(t, 30*time.Second, cmd) // contract_test.go
	v, ok := strings.CutPrefix(line, "listening rest=")
	restAddr, grpcAddr, ok2 := strings.Cut(v, ",grpc=")
	if !ok || !ok2 {
		t.Fatalf("shop_server.py printed %q", line)
	}
	file := writeTemp(t, "shop.yaml", `schema: `+schema+`
pairs:
  - name: order
    rest:
      url: http://`+restAddr+`/orders/1
    grpc:
      address: `+grpcAddr+`
      method: shop.v1.Shop/GetOrder
      request: {"id": "1"}
  - name: categories
    rest:
      url: http://`+restAddr+`/categories
    grpc:
      address: `+grpcAddr+`
      method: shop.v1.Shop/GetCategories
      request: {"depth": 4}
`)
	pid := strconv.Itoa(cmd.Process.Pid)
	res := runEndpoints(t, "--endpoints", file, "--server-pid", "rest="+pid+",grpc="+pid)
	if len(res.Cells) != 4 || len(res.Verdicts) != 2 {
		t.Fatalf("%d cells, %d verdicts: want a cell per pair and protocol, a verdict per pair", len(res.Cells), len(res.Verdicts))
	}
	want := map[api.Protocol]results.Decoding{api.REST: results.DecodeTypedJSON, api.GRPC: results.DecodeCompiled}
	for _, c := range res.Cells {
		if c.Calls == 0 || c.Errors != 0 || c.ClientDecoding != want[c.Protocol] || c.ServerCPUUSPerCall == nil {
			t.Errorf("%s %s: %d calls, %d errors %v, decoded %q (%s), server CPU %v", c.Scenario, c.Protocol, c.Calls, c.Errors,
				c.ErrorExamples, c.ClientDecoding, c.ClientDecodingWhy, c.ServerCPUUSPerCall)
		}
	}
	for _, v := range res.Verdicts {
		if strings.Contains(v.Summary, "generic") || strings.Contains(v.Summary, "dynamicpb") {
			t.Errorf("verdict %q: both sides decode typed", v.Summary)
		}
	}
	for _, w := range res.Warnings {
		if strings.Contains(w, "dynamicpb") || strings.Contains(w, "generic") || strings.Contains(w, "not supported") {
			t.Errorf("warning %q", w)
		}
	}
}
