// Package payloadtest gives tests the meteorites as a --payload: the JSON
// the server writes today, in a file, and loaded with the contract's
// schema.
package payloadtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/payload"
)

// MeteoritesFile writes the list answer the server writes today to a file
// in the test's temporary directory and returns its path.
func MeteoritesFile(tb testing.TB) string {
	tb.Helper()
	b, err := json.Marshal(data.MustLandings())
	if err != nil {
		tb.Fatal(err)
	}
	file := filepath.Join(tb.TempDir(), "meteorites.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	return file
}

// Meteorites loads MeteoritesFile with the contract's schema,
// api/meteor.proto, and its element type MeteoriteLanding.
func Meteorites(tb testing.TB) *payload.Payload {
	tb.Helper()
	p, err := payload.Load(MeteoritesFile(tb), payload.Options{Schema: schema(tb), Message: "MeteoriteLanding"})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// schema is the path of api/meteor.proto, whichever package's test asks.
func schema(tb testing.TB) string {
	tb.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("payloadtest: no caller information to find api/meteor.proto")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "api", "meteor.proto")
}
