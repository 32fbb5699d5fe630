package session_test

import (
	"bufio"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// codecCounts reads the server's per-codec count of rest calls.
func codecCounts(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + api.PathMetrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), api.MetricJSONCodec+`{codec="`)
		if !ok {
			continue
		}
		name, v, _ := strings.Cut(rest, `"} `)
		if out[name], err = strconv.ParseFloat(v, 64); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// Config.JSONCodecs std,v2,sonic over rest and grpc: each rest cell once
// per codec (keyed ".../json-v2" when not std), each grpc cell once, every
// call valid, and the server served each codec's calls with that codec.
func TestRunJSONCodecs(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	cfg := quick(addr)
	cfg.Protocols = []api.Protocol{api.REST, api.GRPC}
	cfg.JSONCodecs = []string{jsoncodec.Std, jsoncodec.V2, jsoncodec.Sonic}
	cfg.Scenarios = shortScenarios(t)
	before := codecCounts(t, addr)
	res := run(t, cfg)
	after := codecCounts(t, addr)

	scenarios := len(cfg.Scenarios)
	if got, want := len(res.Cells), scenarios*(3+1); got != want {
		t.Fatalf("%d cells, want %d", got, want)
	}
	count := map[string]int{}
	for _, c := range res.Cells {
		if c.Errors != 0 || c.Calls != 2*3 {
			t.Errorf("%s: %d calls, %d errors %v", c.Key(), c.Calls, c.Errors, c.ErrorExamples)
		}
		count[string(c.Protocol)+" "+c.JSONCodec]++
		if c.Protocol == api.GRPC && c.JSONCodec != "" {
			t.Errorf("%s: a grpc cell with a JSON codec", c.Key())
		}
		if c.JSONCodec != "" && !strings.HasSuffix(c.Key(), "/json-"+c.JSONCodec) {
			t.Errorf("key %s: want the codec's part", c.Key())
		}
	}
	for _, k := range []string{"rest ", "rest v2", "rest sonic", "grpc "} {
		if count[k] != scenarios {
			t.Errorf("%q: %d cells, want one per scenario (%v)", k, count[k], count)
		}
	}
	for _, name := range cfg.JSONCodecs {
		// Each rest cell: 2 batches of 3 calls, plus any probe call.
		if d := after[name] - before[name]; d < float64(scenarios*2*3) {
			t.Errorf("server: %v calls with %s, want at least %d", d, name, scenarios*2*3)
		}
	}
	if got := res.Settings.JSONCodecs; len(got) != 3 {
		t.Errorf("settings: json codecs %v", got)
	}
	// The versions come from the binary's build info, as protobuf's do
	// (a test binary may have none): both are known, or neither.
	for _, name := range []string{jsoncodec.V2, jsoncodec.Sonic} {
		v, ok := res.Env.JSONCodecs[name]
		if !ok || (v == "") != (res.Env.ProtobufVersion == "") {
			t.Errorf("env: json codecs %v (protobuf %q), want v2's and sonic's versions", res.Env.JSONCodecs, res.Env.ProtobufVersion)
		}
	}
	// The plan has the sonic rest cell, which a capacity search measures
	// by its key.
	k := results.CellKey{Scenario: api.Post, Protocol: api.REST, Batch: 3, Condition: results.Condition{Concurrency: 1, JSONCodec: jsoncodec.Sonic}}
	if !slices.Contains(cfg.Cells(), k) {
		t.Errorf("Cells() has no %s", k.Key())
	}
	if got := plan.JSONCodecs(); len(got) != 3 {
		t.Errorf("JSONCodecs() = %v", got)
	}
}
