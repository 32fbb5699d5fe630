package report

import (
	"io"
	"testing"
)

// BenchmarkWrite measures each format on the repeats fixture (24 cells,
// three protocols, three repeats).
func BenchmarkWrite(b *testing.B) {
	r := loadFixture(b, "repeats")
	for _, f := range Formats {
		b.Run(f, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Write(io.Discard, f, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
