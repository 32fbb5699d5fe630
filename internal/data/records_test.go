package data

import (
	"reflect"
	"slices"
	"testing"

	"github.com/meteorbench/meteorbench/api"
)

func TestIDsNDefaultIsIDs(t *testing.T) {
	want, err := IDs()
	if err != nil {
		t.Fatal(err)
	}
	got, err := IDsN(Count)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatal("IDsN(Count) differs from IDs()")
	}
	if MaxN != api.MaxRecords || Count != api.DefaultRecords {
		t.Fatalf("MaxN %d, Count %d; the contract says %d, %d", MaxN, Count, api.MaxRecords, api.DefaultRecords)
	}
}

func TestGeneratedIDs(t *testing.T) {
	all, err := IDsN(MaxN)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[uint32]int, len(all))
	for i, id := range all {
		if j, dup := seen[id]; dup {
			t.Fatalf("record %d repeats the id %d of record %d", i, id, j)
		}
		seen[id] = i
		if id == 0 {
			t.Fatalf("record %d has id 0", i)
		}
		if one, err := ID(i); err != nil || one != id {
			t.Fatalf("ID(%d) = %d, %v; IDsN says %d", i, one, err, id)
		}
		if want := all[i%Count] + uint32(i/Count)*IDOffset; id != want {
			t.Fatalf("record %d: id %d, want %d", i, id, want)
		}
	}
	// The documented examples.
	for _, c := range []struct {
		i    int
		want uint32
	}{{0, 1}, {1000, 100001}, {2000, 200001}, {MaxN - Count, 9900001}} {
		if got, _ := ID(c.i); got != c.want {
			t.Errorf("ID(%d) = %d, want %d", c.i, got, c.want)
		}
	}
	// Every shorter answer is a prefix of the longest.
	for _, n := range []int{0, 1, 10, 999, 1001, 2500} {
		got, err := IDsN(n)
		if err != nil || !slices.Equal(got, all[:n]) {
			t.Errorf("IDsN(%d) is not the first %d ids of IDsN(MaxN) (err %v)", n, n, err)
		}
	}
}

func TestLandingsNGeneratesCopies(t *testing.T) {
	base := MustLandings()
	const n = 2500
	ls, err := LandingsN(n)
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := IDsN(n)
	for i := range ls {
		want := base[i%Count].Clone()
		want.ID = ids[i]
		if !reflect.DeepEqual(ls[i], want) {
			t.Fatalf("record %d = %+v\nwant %+v", i, ls[i], want)
		}
		g, err := Generated(base, i)
		if err != nil || !reflect.DeepEqual(g, want) {
			t.Fatalf("Generated(base, %d) = %+v, %v\nwant %+v", i, g, err, want)
		}
	}
	if !reflect.DeepEqual(ls[:Count], base) {
		t.Error("the first Count records of LandingsN are not the data set")
	}
	// A deep copy: changing one record changes nothing else.
	*ls[Count].Mass = -1
	ls[Count].GeoLocation.Coordinates[0] = -1
	if again, _ := LandingsN(n); *again[Count].Mass == -1 || *again[0].Mass == -1 || again[0].GeoLocation.Coordinates[0] == -1 {
		t.Error("LandingsN shares memory between calls or between copies of a record")
	}
}

func TestRecordBounds(t *testing.T) {
	for _, n := range []int{-1, MaxN + 1} {
		if _, err := IDsN(n); err == nil {
			t.Errorf("IDsN(%d): no error", n)
		}
		if _, err := LandingsN(n); err == nil {
			t.Errorf("LandingsN(%d): no error", n)
		}
	}
	for _, i := range []int{-1, MaxN} {
		if _, err := ID(i); err == nil {
			t.Errorf("ID(%d): no error", i)
		}
		if _, err := Generated(MustLandings(), i); err == nil {
			t.Errorf("Generated(base, %d): no error", i)
		}
	}
	if _, err := Generated(MustLandings()[:10], 0); err == nil {
		t.Error("Generated with a 10-record base: no error")
	}
	if ls, err := LandingsN(0); err != nil || len(ls) != 0 {
		t.Errorf("LandingsN(0) = %d records, %v", len(ls), err)
	}
}

func TestLastGeneratedID(t *testing.T) {
	// docs/server.md's example.
	if got, _ := ID(MaxN - 1); got != 9_924_019 {
		t.Errorf("ID(MaxN-1) = %d, want 9924019", got)
	}
}
