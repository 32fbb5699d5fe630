package jsoncodec_test

import (
	"testing"

	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
)

// BenchmarkJSONCodecs encodes and decodes the 1000 records (the large
// answer) with each codec; ns/record and the bytes per second tell the
// codecs apart, the allocations what each leaves to the collector.
func BenchmarkJSONCodecs(b *testing.B) {
	ls := data.MustLandings()
	for _, name := range jsoncodec.Names() {
		c, _ := jsoncodec.Get(name)
		enc, err := c.Marshal(ls)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/encode", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				if _, err := c.Marshal(ls); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ls)), "ns/record")
		})
		b.Run(name+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				var got []data.Landing
				if err := c.Unmarshal(enc, &got); err != nil || len(got) != len(ls) {
					b.Fatal(err, len(got))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ls)), "ns/record")
		})
	}
}
