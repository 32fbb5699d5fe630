package plan

import (
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/target"
)

// --connections 1,4 sweeps: each protocol's cells at each count, right
// after the concurrency, the count carried to the client; settings record
// the sweep; a count below 1 is refused naming it.
func TestConnectionsSweep(t *testing.T) {
	cfg := Config{Target: target.One("127.0.0.1:1"), Protocols: []api.Protocol{api.GRPC, api.REST},
		Scenarios: []api.Scenario{api.Small}, Concurrency: []int{1, 8}, Connections: []int{1, 4}}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range cfg.Cells() {
		var o call.Options
		ClientSettings(k.Condition, &o)
		if o.Connections != k.Conns {
			t.Errorf("%s: client asked for %d connections", k.Key(), o.Connections)
		}
		got = append(got, k.Key())
	}
	want := []string{
		"small/grpc/b100/c1/conn1", "small/rest/b100/c1/conn1", "small/grpc/b100/c1/conn4", "small/rest/b100/c1/conn4",
		"small/grpc/b100/c8/conn1", "small/rest/b100/c8/conn1", "small/grpc/b100/c8/conn4", "small/rest/b100/c8/conn4",
	}
	if len(got) != len(want) {
		t.Fatalf("cells %q, want %q", got, want)
	}
	seen := map[string]bool{}
	for _, k := range got {
		seen[k] = true
	}
	for _, k := range want {
		if !seen[k] {
			t.Errorf("no cell %s in %q", k, got)
		}
	}
	if s := cfg.Settings(); len(s.ConnectionsSweep) != 2 {
		t.Errorf("settings: connections %d, sweep %v", s.Connections, s.ConnectionsSweep)
	}
	cfg.Connections = []int{0}
	if err := cfg.Validate(); err == nil {
		t.Error("--connections 0 accepted")
	}
}
