package payload_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/internal/payload"
)

// FuzzDeriveRoundTrip: any bytes as a sample (schema, run --payload, serve
// --payload) derive a schema or fail with one line, never panic; a sample
// that loads goes through the round-trip check (schema --check) without a
// panic or an error, and each of its one-object, wrapped and array forms
// derives the same way.
func FuzzDeriveRoundTrip(f *testing.F) {
	for _, s := range []string{
		`[{"a":1,"b":"x"},{"a":2.5,"c":[1,2]}]`,
		`{"name":"root","children":[{"name":"a","children":[{"name":"b","children":[]}]}]}`,
		`{"name":"root","kids":[{"name":"a"}],"children":[{"name":"a","children":[{"name":"b"}]}]}`,
		`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[1.5,2],[3,4.25]]]},"properties":{"n":"a"}}]}`,
		`{"events":{"138586341":{"id":138586341,"name":"x"},"138586342":{"id":138586342,"name":"y"}}}`,
		`[{"m":{"2024-01-01":1,"2024-01-02":2}},{"m":{}}]`,
		`[{"t":"2024-01-01T00:00:00Z","n":null,"e":[]}]`,
		`[{"x":[[[]]]}]`,
		`{"a":{"a":{"a":{"b":1}}}}`,
		`[{"big":123456789012345678901234567890,"u":18446744073709551615}]`,
	} {
		f.Add([]byte(s))
	}
	codecs := allCodecs(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		file := filepath.Join(t.TempDir(), "s.json")
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, items := range []string{"", payload.WholeObject} {
			if d, err := payload.Derive(file, items); err != nil {
				oneLine(t, "derive", err)
			} else if d.Proto == "" {
				t.Fatal("derived an empty schema")
			}
			p, err := payload.Load(file, payload.Options{Items: items})
			if err != nil {
				oneLine(t, "load", err)
				continue
			}
			if _, err := p.CheckRoundTrip(codecs); err != nil {
				t.Fatalf("a loaded sample's round trip: %v", err)
			}
		}
	})
}

// A sample of one object is checked with every codec, one after the
// other (the second codec's check used to panic: the sample's values were
// unwrapped from their list once per codec).
func TestOneObjectRoundTrip(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tree.json")
	src := `{"name":"root","kids":[{"name":"a"}],"children":[{"name":"a","children":[{"name":"b"}]}]}`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := payload.Load(file, payload.Options{})
	if err != nil {
		t.Fatal(err)
	}
	codecs := allCodecs(t)
	rts, err := p.CheckRoundTrip(codecs)
	if err != nil || len(rts) != len(codecs) {
		t.Fatalf("%d checks, %v", len(rts), err)
	}
	for _, r := range rts {
		if !r.OK() {
			t.Errorf("%s: %v", r.Codec, r.Diffs)
		}
	}
}

// oneLine fails t unless err is one line naming the sample.
func oneLine(t *testing.T, what string, err error) {
	t.Helper()
	var pe *payload.PathError
	if strings.Contains(err.Error(), "\n") || (!errors.As(err, &pe) && !strings.HasPrefix(err.Error(), "payload")) {
		t.Fatalf("%s: %q is not one line naming the sample", what, err)
	}
}
