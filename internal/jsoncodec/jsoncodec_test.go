package jsoncodec_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
)

// TestRoundTripMatrix encodes the data set with every codec (as one array,
// and record by record as the stream does) and decodes it with every codec:
// every decoder must read every encoder's output into the same records.
func TestRoundTripMatrix(t *testing.T) {
	ls := data.MustLandings()
	// A record with every optional field absent, and a nil slice, where
	// the codecs' defaults differ.
	ls = append(ls, data.Landing{ID: 1, Name: `<&> "q" ü`, GeoLocation: &data.GeoLocation{Type: "Point"}})
	for _, enc := range jsoncodec.Names() {
		ec, _ := jsoncodec.Get(enc)
		whole, err := ec.Marshal(ls)
		if err != nil {
			t.Fatalf("%s: marshal: %v", enc, err)
		}
		var lines bytes.Buffer
		e := ec.NewEncoder(&lines)
		for i := range ls {
			if err := e.Encode(&ls[i]); err != nil {
				t.Fatalf("%s: encode record %d: %v", enc, i, err)
			}
		}
		for _, dec := range jsoncodec.Names() {
			dc, _ := jsoncodec.Get(dec)
			t.Run(enc+"->"+dec, func(t *testing.T) {
				var got []data.Landing
				if err := dc.Unmarshal(whole, &got); err != nil {
					t.Fatalf("unmarshal array: %v", err)
				}
				if !reflect.DeepEqual(got, ls) {
					t.Fatalf("array: the records differ after the round trip")
				}
				rows := strings.Split(strings.TrimSuffix(lines.String(), "\n"), "\n")
				if len(rows) != len(ls) {
					t.Fatalf("%d lines, want %d", len(rows), len(ls))
				}
				for i, row := range rows {
					var l data.Landing
					if err := dc.Unmarshal([]byte(row), &l); err != nil {
						t.Fatalf("line %d: %v", i, err)
					}
					if !reflect.DeepEqual(l, ls[i]) {
						t.Fatalf("line %d: record differs: %+v, want %+v", i, l, ls[i])
					}
				}
			})
		}
	}
}

// TestV2KeepsV1Wire pins the options that keep v2's output what v1 writes.
func TestV2KeepsV1Wire(t *testing.T) {
	v2, _ := jsoncodec.Get(jsoncodec.V2)
	b, err := v2.Marshal(data.GeoLocation{Type: "Point"})
	if err != nil || string(b) != `{"type":"Point","coordinates":null}` {
		t.Fatalf("nil slice: %s, %v; want null as encoding/json writes", b, err)
	}
	var g data.GeoLocation
	if err := v2.Unmarshal([]byte(`{"TYPE":"Point"}`), &g); err != nil || g.Type != "Point" {
		t.Fatalf("case-insensitive name: %+v, %v", g, err)
	}
}

func TestGet(t *testing.T) {
	if c, err := jsoncodec.Get(""); err != nil || c.Name != jsoncodec.Std {
		t.Fatalf(`Get(""): %v, %v; want std`, c, err)
	}
	if _, err := jsoncodec.Get("goccy"); err == nil || !strings.Contains(err.Error(), "std, v2, sonic") {
		t.Fatalf("Get(goccy): %v; want an error listing the codecs", err)
	}
}
