package endpointcall

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
)

// BenchmarkDecode is what a gRPC endpoint's answer costs to decode without
// generated code: the 1000 records as dynamicpb against the generated
// type (loadgen.DynamicDecodeNote quotes it).
func BenchmarkDecode(b *testing.B) {
	ls, err := data.Landings()
	if err != nil {
		b.Fatal(err)
	}
	raw, err := proto.Marshal(data.ProtoList(ls))
	if err != nil {
		b.Fatal(err)
	}
	md := (&pb.MeteoriteLandingList{}).ProtoReflect().Descriptor()
	for _, bc := range []struct {
		name string
		msg  func() proto.Message
	}{
		{"generated", func() proto.Message { return &pb.MeteoriteLandingList{} }},
		{"dynamicpb", func() proto.Message { return dynamicpb.NewMessage(md) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if err := proto.Unmarshal(raw, bc.msg()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
