package loadgen_test

import (
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// Config.Compress none,gzip: every cell in both conditions, all calls
// valid (the adapters inflate what they asked for), gzip cells named
// ".../gzip", connections kept open, and the large answers far fewer bytes
// on the wire, received, while small and post requests and answers are
// still what they are.
func TestRunCompress(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	cfg := quick(addr)
	cfg.Scenarios = []api.Scenario{api.Small, api.Large, api.Stream, api.Post}
	cfg.Compress = []string{loadgen.CompressNone, loadgen.CompressGzip}
	res := run(t, cfg)
	if got, want := len(res.Cells), 4*3*2; got != want {
		t.Fatalf("%d cells, want %d", got, want)
	}
	if len(res.Settings.Compress) != 2 {
		t.Errorf("settings: compress %v", res.Settings.Compress)
	}
	cells := map[string]*results.Cell{}
	for i := range res.Cells {
		c := &res.Cells[i]
		cells[c.Key()] = c
		if c.Errors != 0 || c.Calls != 2*3 {
			t.Errorf("%s: %d calls, %d errors %v", c.Key(), c.Calls, c.Errors, c.ErrorExamples)
		}
		if want := 1; c.Connections != want {
			t.Errorf("%s: %d connections, want %d (kept open across calls)", c.Key(), c.Connections, want)
		}
	}
	for _, sc := range []api.Scenario{api.Large, api.Stream, api.Post} {
		for _, p := range api.Protocols() {
			plain := cells[results.CellKey{Scenario: sc, Protocol: p, Batch: 3, Condition: results.Condition{Concurrency: 1}}.Key()]
			gz := cells[results.CellKey{Scenario: sc, Protocol: p, Batch: 3, Condition: results.Condition{Concurrency: 1, Compress: "gzip"}}.Key()]
			if plain == nil || gz == nil {
				t.Fatalf("%s/%s: missing a cell (keys %v)", sc, p, keys(cells))
			}
			pb, gb := plain.BytesPerCall, gz.BytesPerCall
			t.Logf("%s/%s: sent %.0f -> %.0f B, received %.0f -> %.0f B", sc, p, pb.Sent, gb.Sent, pb.Received, gb.Received)
			switch {
			case sc == api.Post && gb.Sent*2 > pb.Sent:
				t.Errorf("%s/%s: %.0f B sent with gzip, %.0f without: want under half", sc, p, gb.Sent, pb.Sent)
			case sc == api.Large && gb.Received*2 > pb.Received:
				t.Errorf("%s/%s: %.0f B received with gzip, %.0f without: want under half", sc, p, gb.Received, pb.Received)
			case sc == api.Stream && p != api.GRPC && gb.Received*2 > pb.Received:
				// (gRPC compresses each ~100-byte record alone: no gain.)
				t.Errorf("%s/%s: %.0f B received with gzip, %.0f without: want under half", sc, p, gb.Received, pb.Received)
			}
		}
	}
	assertRoundTrip(t, res)
}

func keys(m map[string]*results.Cell) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func TestConfigCompressInvalid(t *testing.T) {
	for _, zs := range [][]string{{"br"}, {"gzip", "gzip"}, {""}} {
		cfg := loadgen.Config{Target: "127.0.0.1:1", Compress: zs}
		if err := cfg.Validate(); err == nil {
			t.Errorf("compress %q: no error", zs)
		}
	}
}
