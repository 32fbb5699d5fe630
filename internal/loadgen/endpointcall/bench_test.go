package endpointcall

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/payload/payloadtest"
)

// BenchmarkDecode is what a gRPC endpoint's answer costs to decode: the
// 1000 records as generated code decodes them, as the compiled codec does
// for a method found at run time (what the endpoint adapter uses), and as
// dynamicpb does (its fallback for what the compiled codec cannot
// handle), each alone (ns/op, allocations), then the three interleaved
// call by call, reporting compiled/gen and dynamicpb/gen: ratios a busy
// machine shifts far less than it shifts ns/op between sub-benchmarks.
func BenchmarkDecode(b *testing.B) {
	list, raw, compiled := payloadtest.CompiledList(b)
	md := list.ProtoReflect().Descriptor()
	cases := []struct {
		name   string
		decode func() error
	}{
		{"generated", func() error { return proto.Unmarshal(raw, &pb.MeteoriteLandingList{}) }},
		{"compiled", func() error { return compiled.New().UnmarshalProto(raw) }},
		{"dynamicpb", func() error { return proto.Unmarshal(raw, dynamicpb.NewMessage(md)) }},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if err := bc.decode(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("interleaved", func(b *testing.B) {
		var spent [3]time.Duration
		for b.Loop() {
			for i, bc := range cases {
				t0 := time.Now()
				if err := bc.decode(); err != nil {
					b.Fatal(err)
				}
				spent[i] += time.Since(t0)
			}
		}
		b.ReportMetric(float64(spent[1])/float64(spent[0]), "compiled/gen")
		b.ReportMetric(float64(spent[2])/float64(spent[0]), "dynamicpb/gen")
	})
}
