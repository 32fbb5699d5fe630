package payload_test

import (
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/payload/payloadtest"
)

// BenchmarkCodecs compares, on the 1000 meteorites, the generated code,
// the payload's compiled codec and dynamicpb (the choice the compiled codec
// was measured against), encoding and decoding the list.
func BenchmarkCodecs(b *testing.B) {
	p := payloadtest.Meteorites(b)
	list := data.ProtoList(data.MustLandings())
	wire, _ := proto.Marshal(list)
	items := p.Items(0)
	md, _ := protoregistry.GlobalFiles.FindDescriptorByName("MeteoriteLandingsService.MeteoriteLandingList")
	dyn := dynamicpb.NewMessage(md.(protoreflect.MessageDescriptor))
	_ = proto.Unmarshal(wire, dyn)
	b.Run("encode/generated", func(b *testing.B) {
		for b.Loop() {
			_, _ = proto.Marshal(list)
		}
	})
	b.Run("encode/compiled", func(b *testing.B) {
		for b.Loop() {
			_, _ = items.AppendList(nil)
		}
	})
	b.Run("encode/dynamicpb", func(b *testing.B) {
		for b.Loop() {
			_, _ = proto.Marshal(dyn)
		}
	})
	b.Run("decode/generated", func(b *testing.B) {
		for b.Loop() {
			var l pb.MeteoriteLandingList
			_ = proto.Unmarshal(wire, &l)
		}
	})
	b.Run("decode/compiled", func(b *testing.B) {
		for b.Loop() {
			_, _ = p.DecodeList(wire)
		}
	})
	b.Run("decode/dynamicpb", func(b *testing.B) {
		for b.Loop() {
			m := dynamicpb.NewMessage(dyn.Descriptor())
			_ = proto.Unmarshal(wire, m)
		}
	})
	ls := data.MustLandings()
	js, _ := json.Marshal(ls)
	b.Run("json-encode/builtin", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(ls)
		}
	})
	b.Run("json-encode/payload", func(b *testing.B) {
		v := items.JSON(0, items.Len())
		for b.Loop() {
			_, _ = json.Marshal(v)
		}
	})
	b.Run("json-decode/builtin", func(b *testing.B) {
		for b.Loop() {
			var out []data.Landing
			_ = json.Unmarshal(js, &out)
		}
	})
	b.Run("json-decode/payload", func(b *testing.B) {
		for b.Loop() {
			_ = json.Unmarshal(js, p.NewList())
		}
	})
}
