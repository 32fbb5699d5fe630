package payload_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/payload/payloadtest"
	"github.com/meteorbench/meteorbench/internal/testmode"
)

// allCodecs is every JSON codec of this build.
func allCodecs(t testing.TB) []*jsoncodec.Codec {
	t.Helper()
	var out []*jsoncodec.Codec
	for _, name := range jsoncodec.Names() {
		c, err := jsoncodec.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// keptSamples are the samples in examples/payloads, plain and gzipped.
func keptSamples(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, glob := range []string{"*.json", "*.json.gz"} {
		m, err := filepath.Glob(payloadtest.Example(t, glob))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 8 {
		t.Fatalf("%d samples in examples/payloads, want the 3 shapes, the 2 real responses and the 3 real documents of issue 39: %v", len(files), files)
	}
	return files
}

// Every kept sample derives with no --schema and comes back, value by
// value, through every JSON codec and protobuf (schema --check).
func TestKeptSamplesRoundTrip(t *testing.T) {
	codecs := allCodecs(t)
	for _, file := range keptSamples(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			// A round trip is one goroutine's work: the race detector
			// finds nothing in it, and slows the two real responses to
			// most of a minute and the three 200 KB shapes to half of one
			// (CI's race step: this test was its slowest, 142 s at load
			// average 26). The two small real documents run under it.
			if strings.HasSuffix(file, ".gz") {
				testmode.SkipShort(t, "a real response's round trip (one goroutine, about 50 s under the race detector); runs in the normal step")
			}
			if fi, err := os.Stat(file); err == nil && fi.Size() > 64<<10 {
				testmode.SkipShort(t, "a 200 KB shape's round trip (one goroutine; the small documents run under the race detector); runs in the normal step")
			}
			p := payloadtest.Load(t, file, payload.Options{})
			rts, err := p.CheckRoundTrip(codecs)
			if err != nil {
				t.Fatal(err)
			}
			if len(rts) != len(codecs) {
				t.Fatalf("%d codecs checked, want %d", len(rts), len(codecs))
			}
			for _, r := range rts {
				if !r.OK() || r.JSONBytes == 0 || r.ProtoBytes == 0 {
					t.Errorf("%s: %d differences, %d B JSON, %d B protobuf: %s", r.Codec, r.Count, r.JSONBytes, r.ProtoBytes, strings.Join(r.Diffs, "; "))
				}
			}
		})
	}
}

// The real search response: its list is under "statuses" beside the
// search metadata, found by itself; fields null in every status and
// arrays empty in every status are google.protobuf.Value with a warning
// each; ids beyond 2^53 are int64 and come back exactly (the round trip
// above compares numbers exactly).
func TestTwitterSample(t *testing.T) {
	file := payloadtest.Example(t, "twitter-search.json.gz")
	p := payloadtest.Load(t, file, payload.Options{})
	if p.Len() != 100 || p.ItemsKey() != "statuses" {
		t.Fatalf("%d items under %q, want 100 under statuses", p.Len(), p.ItemsKey())
	}
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], `"statuses"`) {
		t.Errorf("notes %q: want one naming the items' key", p.Notes)
	}
	wantWarnings(t, p, "$.statuses[0].geo: null in every item", "$.statuses[0].entities.symbols: an empty array in every item")
	for _, want := range []string{
		"  int64 id = ",
		"  google.protobuf.Value geo = ",
		"  repeated google.protobuf.Value symbols = ",
		"message List {\n  repeated .meteorbench.payload.Item statuses = 1;\n  SearchMetadata search_metadata = 2 [json_name = \"search_metadata\"];\n",
	} {
		if !strings.Contains(p.Proto, want) {
			t.Errorf("schema lacks %q", want)
		}
	}
	// The answer is the whole response: the wrapper around the items.
	open, close, err := p.Items(0).Around(jsoncodec.Default().Marshal)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(open), `{"statuses":`) || !strings.HasPrefix(string(close), `,"search_metadata":{"completed_in":0.087,"max_id":505874924095815700,`) {
		t.Errorf("answer around the items: %.40s ... %.80s", open, close)
	}
}

// The check is not blind: what protobuf cannot carry is listed, by path,
// for every codec; and numbers past 64 bits keep their digits.
func TestRoundTripFindsLosses(t *testing.T) {
	file := filepath.Join(t.TempDir(), "lossy.json")
	sample := `{"data": [
	 {"id": 18446744073709551615, "huge": -99999999999999999999, "n": 1, "y": 1, "at": "2020-01-01T00:00:00.5Z", "local": "2020-01-01T01:00:00+01:00"},
	 {"id": 1, "huge": 3, "n": 9007199254740993.5, "y": null, "at": "2020-01-01T00:00:00Z", "local": "2020-01-01T02:00:00+01:00"},
	 {"id": 2, "huge": 4, "n": 2, "at": "2021-01-01T00:00:00Z", "local": "x"}
	], "next": null}`
	if err := os.WriteFile(file, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	p := payloadtest.Load(t, file, payload.Options{Items: "data"})
	for _, want := range []string{"  uint64 id = 1;", "  string huge = 2;", "  double n = 3;", "  optional int64 y = 4;", "  google.protobuf.Timestamp at = 5;", "  string local = 6;", "  google.protobuf.Value next = 2;"} {
		if !strings.Contains(p.Proto, want+"\n") {
			t.Errorf("schema lacks %q:\n%s", want, p.Proto)
		}
	}
	wantWarnings(t, p,
		"$.data[0].id: integers beyond int64 (up to 2^64-1), so it is uint64",
		"$.data[0].huge: integers beyond int64 and uint64 together, so it is a string (written as a JSON number)",
		"$.data[0].n: integers and fractions, so it is double",
		"$.data[0].y: null in some items and missing in others",
		"$.next: null in every item")
	rts, err := p.CheckRoundTrip(allCodecs(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rts {
		// A double cannot hold 9007199254740993.5 (warned above); a
		// null beside a missing key comes back missing.
		want := []string{"$.data[1].n: 9007199254740993.5 in, 9007199254740994 out", "$.data[1].y: null in, absent out"}
		if !slices.Equal(r.Diffs, want) {
			t.Errorf("%s: differences %q, want %q", r.Codec, r.Diffs, want)
		}
	}
}

// --items names the list; a key that holds something else, or none, is
// refused saying what it holds; an object with several lists is one item
// unless --items picks one.
func TestItemsKey(t *testing.T) {
	file := filepath.Join(t.TempDir(), "wrapped.json")
	if err := os.WriteFile(file, []byte(`{"meta": {"n": 2}, "data": [{"a": 1}, {"a": 2}], "links": [{"href": "x"}], "tags": ["a"], "none": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for items, want := range map[string]string{
		"meta":  "$.meta: --items meta: it holds an object, not an array of objects",
		"tags":  "$.tags: --items tags: it holds an array of which one element is a string, not an array of objects",
		"none":  "$.none: --items none: it holds an empty array, not an array of objects",
		"other": "$: --items other: the sample object has no such key (its keys: meta, data, links, tags, none)",
	} {
		_, err := payload.Load(file, payload.Options{Items: items})
		if err == nil || err.Error() != "payload "+file+": "+want {
			t.Errorf("--items %s: %v, want %q", items, err, want)
		}
	}
	p := payloadtest.Load(t, file, payload.Options{})
	if p.Len() != 1 || p.ItemsKey() != "" || len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "data, links each hold an array of objects") {
		t.Errorf("no --items: %d items under %q, notes %q", p.Len(), p.ItemsKey(), p.Notes)
	}
	p = payloadtest.Load(t, file, payload.Options{Items: "data"})
	if p.Len() != 2 || p.ItemsKey() != "data" || len(p.Notes) != 0 {
		t.Errorf("--items data: %d items under %q, notes %q", p.Len(), p.ItemsKey(), p.Notes)
	}
	// More items than the sample has: the items repeat, the object around
	// them stays once.
	open, close, err := p.Items(5).Around(jsoncodec.Default().Marshal)
	if err != nil || string(open) != `{"meta":{"n":2},"data":` || string(close) != `,"links":[{"href":"x"}],"tags":["a"],"none":[]}` {
		t.Errorf("around 5 items: %s ... %s, %v", open, close, err)
	}
	wire, err := p.Items(5).AppendList(nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := p.DecodeList(wire)
	if err != nil || back.Len() != 5 {
		t.Fatalf("5 items through protobuf: %d, %v", back.Len(), err)
	}
	if err := back.Check(); err != nil {
		t.Error(err)
	}
	arr := filepath.Join(t.TempDir(), "arr.json")
	if err := os.WriteFile(arr, []byte(`[{"a": 1}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := payload.Load(arr, payload.Options{Items: "data"}); err == nil || !strings.Contains(err.Error(), "$: --items data names a key of an object, and the sample is an array") {
		t.Errorf("--items on an array: %v", err)
	}
}

// wantWarnings fails t unless each of want is in one of p's warnings.
func wantWarnings(t *testing.T, p *payload.Payload, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.ContainsFunc(p.Warnings, func(s string) bool { return strings.Contains(s, w) }) {
			t.Errorf("no warning %q in %q", w, p.Warnings)
		}
	}
}

// The three real documents of issue 39 derive as a person would write
// their schemas: maps for objects keyed by ids, wrapper messages for arrays
// of arrays, one recursive message for a tree; one note per rule, and few
// warnings (no field per id).
func TestRealShapesDerive(t *testing.T) {
	for _, c := range []struct {
		file  string
		want  []string
		notes int
	}{
		{"citm-catalog.json.gz", []string{"map<string, EventsValue> events = ", "map<string, string> areaNames = ", "map<string, TopicSubTopicsValue> topicSubTopics = "}, 2},
		{"geojson-polygons.json", []string{"repeated CoordinatesElem coordinates = ", "message CoordinatesElemElem {\n        repeated double v = 1;"}, 2},
		{"npm-dependency-tree.json", []string{"map<string, .meteorbench.payload.Item> dependencies = "}, 2},
	} {
		t.Run(c.file, func(t *testing.T) {
			d, err := payload.Derive(payloadtest.Example(t, c.file), "")
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(d.Proto, w) {
					t.Errorf("schema lacks %q:\n%s", w, d.Proto)
				}
			}
			if len(d.Notes) != c.notes || len(d.Warnings) > 6 || strings.Contains(d.Proto, "f_1385") {
				t.Errorf("%d notes (want %d), %d warnings: %q %q", len(d.Notes), c.notes, len(d.Warnings), d.Notes, d.Warnings)
			}
		})
	}
}
