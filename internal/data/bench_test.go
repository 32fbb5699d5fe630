package data

import (
	"encoding/json"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
)

// The four encodings a call pays for: the server encodes the list, the client
// decodes it (and the reverse for uploads). Run with
//
//	go test -run '^$' -bench . -benchmem ./internal/data
func BenchmarkEncodeList(b *testing.B) {
	ls := MustLandings()
	b.Run("json", func(b *testing.B) { benchEncodeJSON(b, ls) })
	b.Run("protobuf", func(b *testing.B) { benchEncodeProto(b, ls) })
}

func BenchmarkDecodeList(b *testing.B) {
	ls := MustLandings()
	b.Run("json", func(b *testing.B) {
		in, err := json.Marshal(ls)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			var out []Landing
			if err := json.Unmarshal(in, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("protobuf", func(b *testing.B) {
		in, err := proto.Marshal(ProtoList(ls))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			var out pb.MeteoriteLandingList
			if err := proto.Unmarshal(in, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// What a caller of Landings pays for its own copy of the records (the parse
// itself happens once per process).
func BenchmarkLandingsCopy(b *testing.B) {
	MustLandings()
	b.ReportAllocs()
	for b.Loop() {
		MustLandings()
	}
}

// What an answer of N records costs to encode, and its size on the wire:
//
//	go test -run '^$' -bench EncodeRecords -benchmem ./internal/data
func BenchmarkEncodeRecords(b *testing.B) {
	for _, n := range []int{1, 10, 1000, 10000, 100000} {
		ls, err := LandingsN(n)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("json/n=%d", n), func(b *testing.B) { benchEncodeJSON(b, ls) })
		b.Run(fmt.Sprintf("protobuf/n=%d", n), func(b *testing.B) { benchEncodeProto(b, ls) })
	}
}

// benchEncodeJSON measures json.Marshal of ls, and reports the encoding's size.
func benchEncodeJSON(b *testing.B, ls []Landing) {
	benchEncode(b, func() ([]byte, error) { return json.Marshal(ls) })
}

// benchEncodeProto measures proto.Marshal of ls as a list message (built
// once, outside the loop), and reports the encoding's size.
func benchEncodeProto(b *testing.B, ls []Landing) {
	list := ProtoList(ls)
	benchEncode(b, func() ([]byte, error) { return proto.Marshal(list) })
}

func benchEncode(b *testing.B, marshal func() ([]byte, error)) {
	b.ReportAllocs()
	var size int
	for b.Loop() {
		out, err := marshal()
		if err != nil {
			b.Fatal(err)
		}
		size = len(out)
	}
	b.SetBytes(int64(size))
	b.ReportMetric(float64(size), "wire-B/op")
}
