package payload_test

import (
	"fmt"
	"testing"

	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/payload/payloadtest"
)

// Without a sample, --message is refused, and --schema unless it
// describes a --grpc-method; with one, the sample is loaded.
func TestFlagsLoad(t *testing.T) {
	schema := payload.Options{Schema: "a.proto"}
	cases := map[string]struct {
		f          payload.Flags
		schemaUsed bool
		want       string // the error, "<nil>" for none
	}{
		"none":               {payload.Flags{}, false, "<nil>"},
		"message alone":      {payload.Flags{Options: payload.Options{Message: "Item"}}, false, "--message needs --payload"},
		"schema alone":       {payload.Flags{Options: schema}, false, "--schema needs --payload (with --message), --grpc-method or --endpoints"},
		"schema of a method": {payload.Flags{Options: schema}, true, "<nil>"},
	}
	for name, c := range cases {
		if p, err := c.f.Load(c.schemaUsed); p != nil || fmt.Sprint(err) != c.want {
			t.Errorf("%s: got %v, %v; want no payload, %s", name, p, err, c.want)
		}
	}
	if p, err := (payload.Flags{File: payloadtest.MeteoritesFile(t)}).Load(false); err != nil || p == nil {
		t.Fatalf("--payload: got %v, %v", p, err)
	}
}
