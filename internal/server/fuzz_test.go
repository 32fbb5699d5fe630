package server

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/meteorbench/meteorbench/internal/data"
)

// FuzzDecodeLandingsJSON: the POST body decoder never panics, and whatever it
// accepts re-encodes to JSON that decodes to the same records (encoding them
// again gives the same bytes).
func FuzzDecodeLandingsJSON(f *testing.F) {
	// A few real records (the whole data set is a poor seed: the fuzzer
	// spends its time minimising 220 kB inputs).
	few, err := json.Marshal(data.MustLandings()[:3])
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{
		few, few[:len(few)/2],
		[]byte(`[]`), []byte(`null`), []byte(`{}`), []byte(``), []byte(`[`), []byte(`[] []`), []byte(`[{}]`),
		[]byte(`[{"id":1,"name":"Aachen","mass":21,"year":"1880-01-01T00:00:00Z","geolocation":{"type":"Point","coordinates":[6.08333,50.775]}}]`),
		[]byte(`[{"id":1,"year":"1880-01-01T00:00:00+01:00"}]`),
		[]byte(`[{"id":4294967296}]`), []byte(`[{"mass":"21"}]`), []byte(`[{"mass":1e400}]`), []byte(`[{"mass":-0}]`),
		[]byte(`[{"id":1,"unknown":[1,2,{"x":null}]}]`), []byte(`[{"name":"\ud800"}]`), []byte(`[{"geolocation":null}]`),
		[]byte("\xef\xbb\xbf[]"), []byte(` [ ] `), []byte(`[{"ID":2,"Name":"case"}]`),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ls, err := decodeLandingsJSON(bytes.NewReader(body))
		if err != nil {
			if ls != nil {
				t.Fatalf("records and an error: %v", err)
			}
			return
		}
		if ls == nil {
			t.Fatal("nil records and no error")
		}
		b1, err := json.Marshal(ls)
		if err != nil {
			t.Fatalf("accepted records do not re-encode: %v", err)
		}
		ls2, err := decodeLandingsJSON(bytes.NewReader(b1))
		if err != nil {
			t.Fatalf("re-encoded records do not decode: %v\n%s", err, b1)
		}
		if len(ls2) != len(ls) {
			t.Fatalf("%d records became %d", len(ls), len(ls2))
		}
		for i := range ls {
			if !sameLanding(ls[i], ls2[i]) {
				t.Fatalf("record %d changed in a round trip:\n%+v\n%+v", i, ls[i], ls2[i])
			}
		}
		if b2, _ := json.Marshal(ls2); !bytes.Equal(b1, b2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", b1, b2)
		}
	})
}

// sameLanding compares two landings by value (times with Equal and the same
// offset, floats bit for bit).
func sameLanding(a, b data.Landing) bool {
	fe := func(x, y *float64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	if a.ID != b.ID || a.Name != b.Name || a.NameType != b.NameType || a.RecClass != b.RecClass || a.Fall != b.Fall ||
		!fe(a.Mass, b.Mass) || !fe(a.RecLat, b.RecLat) || !fe(a.RecLong, b.RecLong) {
		return false
	}
	if (a.Year == nil) != (b.Year == nil) {
		return false
	}
	if a.Year != nil {
		_, oa := a.Year.Zone()
		_, ob := b.Year.Zone()
		if !a.Year.Equal(*b.Year) || oa != ob {
			return false
		}
	}
	if (a.GeoLocation == nil) != (b.GeoLocation == nil) {
		return false
	}
	if g, h := a.GeoLocation, b.GeoLocation; g != nil {
		if g.Type != h.Type || len(g.Coordinates) != len(h.Coordinates) {
			return false
		}
		for i := range g.Coordinates {
			if g.Coordinates[i] != h.Coordinates[i] {
				return false
			}
		}
	}
	return true
}
