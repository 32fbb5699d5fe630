package endpointcall

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/payload"
)

// BenchmarkDecode is what a gRPC endpoint's answer costs to decode: the
// 1000 records as generated code decodes them, as the compiled codec does
// for a method found at run time (what the endpoint adapter uses), and as
// dynamicpb does (its fallback for what the compiled codec cannot
// handle). Each reports ns/op; compiled/generated is reported as "x-gen"
// on the compiled case, measured in the same run right after generated.
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
	compiled, err := payload.Compile(md)
	if err != nil {
		b.Fatal(err)
	}
	var generated float64 // ns/op of the generated case
	for _, bc := range []struct {
		name   string
		decode func() error
	}{
		{"generated", func() error { return proto.Unmarshal(raw, &pb.MeteoriteLandingList{}) }},
		{"compiled", func() error { return compiled.New().UnmarshalProto(raw) }},
		{"dynamicpb", func() error { return proto.Unmarshal(raw, dynamicpb.NewMessage(md)) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if err := bc.decode(); err != nil {
					b.Fatal(err)
				}
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if bc.name == "generated" {
				generated = ns
			} else if generated > 0 {
				b.ReportMetric(ns/generated, "x-gen")
			}
		})
	}
}
