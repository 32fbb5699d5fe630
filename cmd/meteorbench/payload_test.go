package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/payload/payloadtest"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// Every sample that cannot be served fails schema, serve and run alike
// before anything is served: exit status 2, one line, naming the place.
func TestPayloadBadSamples(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(payload.MaxSampleBytes + 1); err != nil { // NUL bytes: over the limit before it is read as JSON
		t.Fatal(err)
	}
	f.Close()
	deep := strings.Repeat(`{"a":`, payload.MaxDepth) + `{"b":1}` + strings.Repeat("}", payload.MaxDepth)
	cases := []struct {
		name, sample string
		file         string // instead of sample
		items        string // --items
		want         string // in the message: the JSON path and why
	}{
		{name: "over 64 MiB", file: big, want: "$: the sample is over the 64 MiB limit"},
		{name: "too deep", sample: `[` + deep + `]`, want: "$[0]" + strings.Repeat(".a", payload.MaxDepth-1) + ": nested deeper than 64 levels"},
		{name: "not JSON", sample: `[{"a": 1}, {"a": tru}]`, want: "$[1].a: not JSON"},
		{name: "empty file", sample: ``, want: "$: not JSON: the file is empty"},
		{name: "empty array", sample: `[]`, want: "$: an empty array"},
		{name: "array of arrays", sample: `[[1, 2], [3]]`, want: "$[0]: an array of arrays"},
		{name: "not objects", sample: `[{"a": 1}, "x"]`, want: "$[1]: an item must be an object, not a string"},
		{name: "a number", sample: `42`, want: "$: the sample must be an array of objects or one object"},
		{name: "a list of numbers", sample: `{"data": [1, 2], "next": null}`, items: "data", want: "$.data: --items data: it holds an array of which one element is a number, not an array of objects"},
		{name: "no such key", sample: `{"data": [{"a": 1}]}`, items: "items", want: "$: --items items: the sample object has no such key (its keys: data)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := c.file
			if file == "" {
				file = writeTemp(t, "sample.json", c.sample)
			}
			for _, args := range [][]string{
				{"schema", file},
				{"schema", "--check", file},
				{"serve", "--addr", "127.0.0.1:0", "--payload", file},
				{"run", "--payload", file, "--scenario", "large"},
			} {
				if c.items != "" {
					args = append(args, "--items", c.items)
				}
				_, _, err := execute(t, args...)
				if code := exitCodeQuiet(err); code != 2 {
					t.Fatalf("%s: exit status %d (%v), want 2", args[0], code, err)
				}
				msg := err.Error()
				if strings.Contains(msg, "\n") || !strings.Contains(msg, c.want) || !strings.Contains(msg, "payload "+file) {
					t.Errorf("%s: error %q, want one line naming %s and %q", args[0], msg, file, c.want)
				}
			}
		})
	}
}

// A field whose JSON type differs between items is google.protobuf.Value,
// with a warning naming it; a key that is no identifier keeps its key as
// json_name; the schema compiles again as the payload's (Load).
func TestPayloadSchemaDerivation(t *testing.T) {
	file := writeTemp(t, "mixed.json", `[{"id": 1, "price": 2, "unit-price": 1.5, "note": "a"}, {"id": 2, "price": "n/a", "unit-price": 2}]`)
	stdout, stderr, err := execute(t, "schema", file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`import "google/protobuf/struct.proto";`,
		"  int64 id = 1;\n",
		"  google.protobuf.Value price = 2;\n",
		`  double unit_price = 3 [json_name = "unit-price"];` + "\n",
		"  optional string note = 4;\n",
		"service Payload {",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("schema lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "warning: payload "+file+": $[0].price: its values are number, string, so it is served as google.protobuf.Value") {
		t.Errorf("stderr %q: want the warning naming the field", stderr)
	}
	p := payloadtest.Load(t, file, payload.Options{})
	b, err := json.Marshal(p.Items(0).JSON(0, 2))
	if err != nil {
		t.Fatal(err)
	}
	js := string(b)
	if want := `[{"id":1,"price":2,"unit-price":1.5,"note":"a"},{"id":2,"price":"n/a","unit-price":2}]`; js != want {
		t.Errorf("served JSON %s, want %s", js, want)
	}
}

// A target serving another payload than the run's is refused, naming both;
// the same payload is measured, and named in every cell's condition.
func TestRunTargetPayload(t *testing.T) {
	sample := writeTemp(t, "items.json", `[{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]`)
	other := writeTemp(t, "other.json", `[{"id": 1, "title": "a"}]`)
	p := payloadtest.Load(t, sample, payload.Options{})
	addr := servertest.Start(t, server.Config{Payload: p})
	run := func(extra ...string) (string, error) {
		args := append([]string{"run", "--target", addr, "--batch", "2", "--iterations", "1", "--warmup", "0", "--repeat", "1",
			"--format", "json", "--quiet"}, extra...)
		out, _, err := execute(t, args...)
		return out, err
	}
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{nil, "serves another payload: it serves payload " + p.ID() + ", this run measures the meteorites (no --payload)"},
		{[]string{"--payload", other}, "serves another payload: it serves payload " + p.ID() + ", this run measures payload other.json@"},
	} {
		if _, err := run(c.extra...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run %q: %v, want %q", c.extra, err, c.want)
		}
	}
	out, err := run("--payload", sample)
	if err != nil {
		t.Fatalf("run with the same payload: %v", err)
	}
	checkPayloadCells(t, out, p, 2)
}

// checkPayloadCells checks a run's JSON results: the 12 cells of the four
// scenarios on three protocols, each with calls (exactly calls, when not
// 0), no errors, and payload p named.
func checkPayloadCells(t *testing.T, out string, p *payload.Payload, calls int) {
	t.Helper()
	res, err := results.Read(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 12 {
		t.Fatalf("%d cells, want 12", len(res.Cells))
	}
	for _, c := range res.Cells {
		if c.Calls == 0 || (calls != 0 && c.Calls != int64(calls)) || c.Errors != 0 || c.Condition.Payload != p.ID() {
			t.Errorf("%s: %d calls, %d errors %v, payload %q", c.Key(), c.Calls, c.Errors, c.ErrorClasses, c.Condition.Payload)
		}
	}
}

// schema --check: one line and exit status 0 when every value of the
// sample came back through every JSON codec and protobuf; the values that
// did not, by path, and exit status 1 otherwise.
func TestSchemaCheck(t *testing.T) {
	file := payloadtest.Example(t, "twitter-search.json.gz")
	stdout, stderr, err := execute(t, "schema", "--check", file)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if lines := strings.Split(strings.TrimSpace(stdout), "\n"); len(lines) != 1 ||
		!strings.HasPrefix(lines[0], `schema check: twitter-search.json.gz OK: 100 items under "statuses", with the object around them, JSON -> protobuf -> JSON the same values with std, v2`) {
		t.Errorf("stdout %q: want one OK line", stdout)
	}
	if !strings.Contains(stderr, `note: the items are the array under "statuses"`) || !strings.Contains(stderr, "$.statuses[0].geo: null in every item") {
		t.Errorf("stderr %q: want the note and the warnings", stderr)
	}
	lossy := writeTemp(t, "lossy.json", `[{"a": 1, "b": 2}, {"a": 2, "b": null}, {"a": 3}]`)
	stdout, _, err = execute(t, "schema", "--check", lossy)
	if code := exitCodeQuiet(err); code != 1 || !strings.Contains(fmt.Sprint(err), "lossy.json: 3 of 3 JSON codecs did not round-trip the sample") {
		t.Fatalf("lossy sample: exit status %d (%v), want 1", code, err)
	}
	if !strings.Contains(stdout, "lossy.json: 1 values did not come back with std:\n  $[1].b: null in, absent out\n") {
		t.Errorf("stdout %q: want the value that did not come back", stdout)
	}
}

// The real responses and documents kept in examples/payloads (a catalog
// keyed by ids, GeoJSON, a dependency tree: maps, wrapper messages and a
// recursive message) run as they are, wrapped list and all, on every
// protocol and scenario: no errors, every call's answer checked, the
// payload named in every cell.
func TestRunRealSamples(t *testing.T) {
	for _, name := range []string{"twitter-search.json.gz", "fhir-bundle.json.gz", "citm-catalog.json.gz", "geojson-polygons.json", "npm-dependency-tree.json"} {
		t.Run(name, func(t *testing.T) {
			file := payloadtest.Example(t, name)
			p := payloadtest.Load(t, file, payload.Options{})
			addr := servertest.Start(t, server.Config{Payload: p})
			out, _, err := execute(t, "run", "--target", addr, "--payload", file, "--iterations", "4", "--batch", "5",
				"--warmup", "0", "--repeat", "1", "--format", "json", "--quiet")
			// Timing on a loaded machine (a cell's batches not adding up to
			// its time) is the run's own check, not this test's: the
			// results are written all the same, and checked below.
			if err := unlessSuspect(t, err); err != nil {
				t.Fatal(err)
			}
			checkPayloadCells(t, out, p, 0)
		})
	}
}
