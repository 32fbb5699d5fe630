package data

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
)

func TestEmbeddedDataSet(t *testing.T) {
	ls, err := Landings()
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != Count {
		t.Fatalf("%d records, want %d", len(ls), Count)
	}
	var noMass, noLat, noLong, noGeo, noYear, before1970 int
	for _, l := range ls {
		if l.Mass == nil {
			noMass++
		}
		if l.RecLat == nil {
			noLat++
		}
		if l.RecLong == nil {
			noLong++
		}
		if l.GeoLocation == nil {
			noGeo++
		}
		if l.Year == nil {
			noYear++
		} else if l.Year.Year() < 1970 {
			before1970++
		}
	}
	// The counts SOURCE.md documents: a missing value is never silently 0.
	for _, c := range []struct {
		what      string
		got, want int
	}{
		{"without mass", noMass, 28},
		{"without reclat", noLat, 12},
		{"without reclong", noLong, 12},
		{"without geolocation", noGeo, 12},
		{"without year", noYear, 1},
		{"before 1970", before1970, 780},
	} {
		if c.got != c.want {
			t.Errorf("records %s: %d, want %d", c.what, c.got, c.want)
		}
	}

	mass, lat, long := 21.0, 50.775, 6.08333
	year := time.Date(1880, 1, 1, 0, 0, 0, 0, time.UTC)
	aachen := Landing{
		ID: 1, Name: "Aachen", NameType: "Valid", RecClass: "L5", Mass: &mass, Fall: "Fell",
		Year: &year, RecLat: &lat, RecLong: &long,
		GeoLocation: &GeoLocation{Type: "Point", Coordinates: []float64{6.08333, 50.775}},
	}
	if !reflect.DeepEqual(ls[0], aachen) {
		t.Errorf("first record = %+v\nwant %+v", ls[0], aachen)
	}
	for _, l := range ls {
		if l.ID == 50693 {
			if l.Year != nil || l.RecLat == nil || *l.RecLat != 0 {
				t.Errorf("id 50693: year %v reclat %v; want no year and a present 0 latitude", l.Year, l.RecLat)
			}
		}
		if l.Name == "Nogata" && (l.Year == nil || l.Year.Year() != 861) {
			t.Errorf("Nogata's year = %v, want 861", l.Year)
		}
	}
}

func TestRoundTripThroughProtobuf(t *testing.T) {
	ls := MustLandings()
	wire, err := proto.Marshal(ProtoList(ls))
	if err != nil {
		t.Fatal(err)
	}
	var list pb.MeteoriteLandingList
	if err := proto.Unmarshal(wire, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.MeteoriteLandings) != len(ls) {
		t.Fatalf("%d messages, want %d", len(list.MeteoriteLandings), len(ls))
	}
	for i, m := range list.MeteoriteLandings {
		got, err := FromProto(m)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, ls[i]) {
			t.Fatalf("record %d (id %d) changed through protobuf:\n got %+v\nwant %+v", i, ls[i].ID, got, ls[i])
		}
	}
}

func TestRoundTripThroughRESTJSON(t *testing.T) {
	ls := MustLandings()
	b, err := json.Marshal(ls)
	if err != nil {
		t.Fatal(err)
	}
	var back []Landing
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, ls) {
		t.Fatal("records changed through the REST JSON shape")
	}
	// The REST shape writes numbers as numbers and leaves missing values out.
	var generic []map[string]any
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatal(err)
	}
	for i, g := range generic {
		if _, ok := g["id"].(float64); !ok {
			t.Fatalf("record %d: id is %T, want a JSON number", i, g["id"])
		}
		if _, has := g["mass"]; has != (ls[i].Mass != nil) {
			t.Fatalf("record %d: mass key present=%v, value present=%v", i, has, ls[i].Mass != nil)
		}
		if _, has := g["year"]; has != (ls[i].Year != nil) {
			t.Fatalf("record %d: year key present=%v, value present=%v", i, has, ls[i].Year != nil)
		}
		for k := range g {
			if strings.HasPrefix(k, ":@") {
				t.Fatalf("record %d keeps Socrata key %q", i, k)
			}
		}
	}
}

func TestParseRejectsBadData(t *testing.T) {
	src := Source()
	cases := []struct {
		name, old, new, want string
	}{
		{"duplicate id", `"id":"2"`, `"id":"1"`, "repeats record"},
		{"bad mass", `"mass":"21"`, `"mass":"21g"`, "bad mass"},
		{"bad year", `"year":"1880-01-01T00:00:00.00Z"`, `"year":"1880"`, "bad year"},
		{"zero id", `"id":"1",`, `"id":"0",`, "bad id"},
		{"id at the generation offset", `"id":"1",`, `"id":"100000",`, "not below 100000"},
		{"not a point", `"coordinates":[6.08333,50.775]`, `"coordinates":[6.08333]`, "GeoJSON point"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := bytes.Replace(src, []byte(c.old), []byte(c.new), 1)
			if bytes.Equal(bad, src) {
				t.Fatalf("fixture: %q not found in the data set", c.old)
			}
			_, err := Parse(bad)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse error = %v, want one containing %q", err, c.want)
			}
		})
	}
	if _, err := Parse([]byte(`[{"id":"1","name":"x"}]`)); err == nil || !strings.Contains(err.Error(), "want 1000") {
		t.Errorf("one record: error = %v, want a count error", err)
	}
	if _, err := Parse([]byte(`[{"id":`)); err == nil {
		t.Error("truncated file parsed without error")
	}
}

func TestFromProtoRejectsInvalidTimestamp(t *testing.T) {
	m := MustLandings()[0].Proto()
	m.Year.Nanos = -1
	if _, err := FromProto(m); err == nil {
		t.Fatal("FromProto accepted a timestamp with negative nanos")
	}
}

// TestAccessorsCopy: what the accessors return belongs to the caller;
// changing it, pointers and slices included, changes nothing for the next
// caller.
func TestAccessorsCopy(t *testing.T) {
	before, err := json.Marshal(MustLandings())
	if err != nil {
		t.Fatal(err)
	}
	ls := MustLandings()
	ls[0].Name = "changed"
	*ls[0].Mass = -1
	*ls[0].Year = time.Time{}
	ls[0].GeoLocation.Coordinates[0] = -1
	ls[1] = Landing{}
	ids, err := IDs()
	if err != nil || len(ids) != Count || ids[0] != 1 {
		t.Fatalf("IDs() = %d ids (first %v), %v", len(ids), ids[:1], err)
	}
	ids[0] = 0
	src := Source()
	src[0] = 'x'

	after, err := json.Marshal(MustLandings())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("changing a returned slice changed the data set")
	}
	if ids2, _ := IDs(); ids2[0] != 1 {
		t.Errorf("IDs()[0] = %d after changing a returned slice, want 1", ids2[0])
	}
	if Source()[0] == 'x' {
		t.Error("changing Source()'s bytes changed the embedded file")
	}
	l := MustLandings()[0]
	if c := l.Clone(); !reflect.DeepEqual(c, l) || c.Mass == l.Mass || c.Year == l.Year || c.GeoLocation == l.GeoLocation {
		t.Errorf("Clone() = %+v: not an equal deep copy of %+v", c, l)
	}
}
