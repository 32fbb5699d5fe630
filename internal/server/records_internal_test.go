package server

import (
	"runtime"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/data"
)

func TestQueryRecords(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want int // 0: an error
	}{
		{"", api.DefaultRecords},
		{"other=1", api.DefaultRecords},
		{"records=1", 1},
		{"records=100000", api.MaxRecords},
		{"records=0100", 100},
		{"a&records=7&b=", 7},
		{"%72ecords=9", 9},
		{"records=%31%30", 10},
		{"records=0", 0},
		{"records=100001", 0},
		{"records=-1", 0},
		{"records=+1", 0},
		{"records=1e3", 0},
		{"records=abc", 0},
		{"records=", 0},
		{"records", 0},
		{"records=1+", 0},
		{"records=%zz", 0},
		{"records=1&records=1", 0},
		{"records=18446744073709551617", 0},
	} {
		got, err := queryRecords(c.raw)
		if c.want == 0 {
			if err == nil {
				t.Errorf("queryRecords(%q) = %d, want an error", c.raw, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("queryRecords(%q) = %d, %v; want %d", c.raw, got, err, c.want)
		}
	}
}

// The generated sequence is what data.LandingsN describes, in both forms.
func TestGeneratedMatchesData(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	ls, msgs, err := s.records(n)
	if err != nil {
		t.Fatal(err)
	}
	want, err := data.LandingsN(n)
	if err != nil {
		t.Fatal(err)
	}
	wantList := data.ProtoList(want)
	for i := range want {
		if ls[i].ID != want[i].ID || !proto.Equal(msgs[i], wantList.MeteoriteLandings[i]) {
			t.Fatalf("record %d differs from data.LandingsN", i)
		}
	}
	if l, _ := s.listMessage(api.DefaultRecords); l != s.list {
		t.Error("the default list is not the server's own message")
	}
}

// What the first request for more than 1000 records pays, once, and what
// the server keeps afterwards:
//
//	go test -run '^$' -bench BuildGenerated -benchmem ./internal/server
func BenchmarkBuildGenerated(b *testing.B) {
	s, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g, err := buildGenerated(s.landings, s.list.MeteoriteLandings)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(g)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := buildGenerated(s.landings, s.list.MeteoriteLandings); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1e6, "retained-MB")
}
