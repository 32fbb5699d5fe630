package payload_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/payload/payloadtest"
	"github.com/meteorbench/meteorbench/internal/testmode"
)

func TestMeteoritesSameBytes(t *testing.T) {
	p := payloadtest.Meteorites(t)
	if p.Len() != data.Count {
		t.Fatalf("%d items", p.Len())
	}
	got, err := p.Items(0).AppendList(nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(data.ProtoList(data.MustLandings()))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("list encoding differs: %d bytes, want %d", len(got), len(want))
	}
	items, err := p.DecodeList(want)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(items.JSON(0, items.Len()))
	wantJS, _ := json.Marshal(data.MustLandings())
	if len(js) != len(wantJS) {
		t.Errorf("JSON: %d bytes, want %d", len(js), len(wantJS))
	}
}

func TestDeriveMeteorites(t *testing.T) {
	d, err := payload.Derive(payloadtest.MeteoritesFile(t), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Log(d.Proto, d.Warnings)
	p := payloadtest.Load(t, payloadtest.MeteoritesFile(t), payload.Options{})
	b, _ := p.Items(0).AppendList(nil)
	t.Log(p.ID(), len(b))
}

// A derived schema's items, read with encoding/json, encode as they do
// read with the protobuf JSON mapping from the same schema given with
// --schema.
func TestDerivedReadsAsProtoJSON(t *testing.T) {
	names := []string{"text-heavy", "number-heavy", "nested"}
	// One goroutine's work over 200 KB samples: 43 s of CI's race step at
	// load average 26 for the three.
	if testmode.Short(t, "the text-heavy shape only (one goroutine's work; the normal step reads all three)") {
		names = names[:1]
	}
	for _, name := range names {
		file := payloadtest.Example(t, name+".json")
		d, err := payload.Derive(file, "")
		if err != nil {
			t.Fatal(err)
		}
		schema := filepath.Join(t.TempDir(), name+".proto")
		if err := os.WriteFile(schema, []byte(d.Proto), 0o644); err != nil {
			t.Fatal(err)
		}
		derived := payloadtest.Load(t, file, payload.Options{})
		given := payloadtest.Load(t, file, payload.Options{Schema: schema, Message: "Item"})
		a, _ := derived.Items(0).AppendList(nil)
		b, _ := given.Items(0).AppendList(nil)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: %d bytes derived, %d through protojson", name, len(a), len(b))
		}
	}
}
