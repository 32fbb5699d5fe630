package payload_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/payload/payloadtest"
)

// Every kind of field round-trips through the compiled codec: what it
// encodes, dynamicpb (the reference) decodes to the messages protojson read
// from the sample, and what it decodes it encodes again to the same bytes.
func TestCompiledCodecRoundTrip(t *testing.T) {
	p := payloadtest.Load(t, "testdata/kinds.json", payload.Options{Schema: "testdata/kinds.proto", Message: "kinds.All"})
	items := p.Items(0)
	wire, err := items.AppendList(nil)
	if err != nil {
		t.Fatal(err)
	}
	list := p.Service.Methods().ByName("PostLargePayload").Input()
	got := dynamicpb.NewMessage(list)
	if err := proto.Unmarshal(wire, got); err != nil {
		t.Fatalf("dynamicpb cannot read the compiled codec's list: %v", err)
	}
	msgs := got.Get(list.Fields().ByNumber(1)).List()
	if msgs.Len() != 2 {
		t.Fatalf("%d items", msgs.Len())
	}
	first := msgs.Get(0).Message()
	for _, c := range []struct {
		field string
		want  any
	}{
		{"i64", int64(-9000000000)}, {"s32", int32(-7)}, {"u64", uint64(18000000000000000000)}, {"fl", float32(1.5)},
		{"str", "héllo"}, {"color", protoreflect.EnumNumber(1)}, {"opt_d", float64(0)}, {"z_last", true},
	} {
		fd := first.Descriptor().Fields().ByName(protoreflect.Name(c.field))
		if v := first.Get(fd).Interface(); v != c.want {
			t.Errorf("%s = %v (%T), want %v", c.field, v, v, c.want)
		}
	}
	if fd := first.Descriptor().Fields().ByName("opt_s"); !first.Has(fd) {
		t.Error("opt_s: an optional empty string lost its presence")
	}
	if fd := first.Descriptor().Fields().ByName("opt_d"); msgs.Get(1).Message().Has(fd) {
		t.Error("opt_d: absent in item 1, present after the round trip")
	}
	// Decoded and encoded again: the same bytes.
	again, err := p.DecodeList(wire)
	if err != nil {
		t.Fatal(err)
	}
	wire2, err := again.AppendList(nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(wire2) != string(wire) {
		t.Errorf("decode then encode: %d bytes, want the %d encoded", len(wire2), len(wire))
	}
	if err := again.Check(); err != nil {
		t.Error(err)
	}
	// Through JSON (what the REST JSON routes write and read): the same.
	js, err := json.Marshal(items.JSON(0, items.Len()))
	if err != nil {
		t.Fatal(err)
	}
	v := p.NewList()
	if err := json.Unmarshal(js, v); err != nil {
		t.Fatal(err)
	}
	if wire3, err := p.Decoded(v).AppendList(nil); err != nil || string(wire3) != string(wire) {
		t.Errorf("through JSON: %v, %d bytes, want the %d encoded\n%s", err, len(wire3), len(wire), js)
	}
	// dynamicpb's own encoding (unpacked and packed alike) reads back.
	ref, _ := proto.Marshal(got)
	if _, err := p.DecodeList(ref); err != nil {
		t.Errorf("the compiled codec cannot read dynamicpb's list: %v", err)
	}
	for _, bad := range [][]byte{{0x0a, 0x05, 0x08}, {0x0a, 0x02, 0x72, 0x05}, {0x0a, 0x03, 0x72, 0x01, 0xff}} {
		if _, err := p.DecodeList(bad); err == nil {
			t.Errorf("% x: decoded, want an error", bad)
		}
	}
}

// A schema that cannot be served is one line naming why.
func TestSchemaErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	sample := write("s.json", `[{"a": 1}]`)
	for _, c := range []struct{ proto, message, want string }{
		{`syntax = "proto3"; message A { int64 a = 1; }`, "B", `has no message "B"`},
		{`syntax = "proto2"; message A { optional group G = 1 { optional int64 a = 2; } }`, "A", "field A.g: groups are not supported"},
		{`syntax = "proto3"; message A { map<double, int64> m = 1; }`, "A", "schema: a.proto:1:36: syntax error"},
		{`syntax = "proto3"; message A { map<string, int64> m = 1 }`, "A", "schema: a.proto:1:"},
		{`syntax = "proto3"; message A { int64 a = 1 }`, "A", "schema: "},
		{`syntax = "proto3"; message A { string a = 1; }`, "A", "$[0]: does not match the schema"},
	} {
		_, err := payload.Load(sample, payload.Options{Schema: write("a.proto", c.proto), Message: c.message})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", c.proto, err, c.want)
		}
	}
}

// FuzzDecodeList: the compiled decoder never panics on any input (the
// server decodes uploads with it), and what it accepts it encodes to bytes
// it decodes again to the same encoding.
func FuzzDecodeList(f *testing.F) {
	p := payloadtest.Load(f, "testdata/kinds.json", payload.Options{Schema: "testdata/kinds.proto", Message: "kinds.All"})
	wire, _ := p.Items(0).AppendList(nil)
	f.Add(wire)
	f.Add([]byte{})
	f.Add(wire[:len(wire)/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		items, err := p.DecodeList(b)
		if err != nil {
			return
		}
		w1, err := items.AppendList(nil)
		if err != nil {
			return // e.g. a google.protobuf.Value holding a non-finite number is still encoded; invalid UTF-8 is not
		}
		again, err := p.DecodeList(w1)
		if err != nil {
			t.Fatalf("re-encoded list does not decode: %v", err)
		}
		if w2, _ := again.AppendList(nil); len(w2) != len(w1) {
			t.Fatalf("encoding is not stable: %d then %d bytes", len(w1), len(w2))
		}
	})
}
