// Package payloadtest gives tests the meteorites as a --payload (the JSON
// the server writes today, in a file, and loaded with the contract's
// schema) and as the compiled codec decodes them, the samples kept in
// examples/payloads, and Load, which fails the test on an error.
package payloadtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
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
	return Load(tb, MeteoritesFile(tb), payload.Options{Schema: fromRoot(tb, "api", "meteor.proto"), Message: "MeteoriteLanding"})
}

// Load is payload.Load, failing the test on an error.
func Load(tb testing.TB, file string, o payload.Options) *payload.Payload {
	tb.Helper()
	p, err := payload.Load(file, o)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// Example is the path of a sample kept in examples/payloads ("nested.json"),
// whichever package's test asks.
func Example(tb testing.TB, name string) string {
	tb.Helper()
	return fromRoot(tb, "examples", "payloads", name)
}

// CompiledList is the 1000 records as a gRPC answer of the contract's list
// (GetLargePayloadAsList): the list, its protobuf encoding (deterministic),
// and the list's message compiled from its descriptor (payload.Compile),
// as a run-time schema's codec decodes it.
func CompiledList(tb testing.TB) (list *pb.MeteoriteLandingList, raw []byte, c *payload.Compiled) {
	tb.Helper()
	list = data.ProtoList(data.MustLandings())
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(list)
	if err != nil {
		tb.Fatal(err)
	}
	c, err = payload.Compile(list.ProtoReflect().Descriptor())
	if err != nil {
		tb.Fatal(err)
	}
	return list, raw, c
}

// fromRoot is the path of a file of the repository, given from its root,
// whichever package's test asks: the nearest folder above the test's
// working directory (its package's) that holds go.mod. Not from
// runtime.Caller: under -trimpath (CI's) it names no folder.
func fromRoot(tb testing.TB, elem ...string) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(append([]string{dir}, elem...)...)
		}
		up := filepath.Dir(dir)
		if up == dir {
			tb.Fatalf("payloadtest: no go.mod above the working directory to find %s", filepath.Join(elem...))
		}
		dir = up
	}
}
