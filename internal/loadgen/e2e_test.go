package loadgen_test

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"

	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/loadgen"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// Every scenario over every protocol against the real server: the counts
// the run reports match the server's own counters, and every figure a
// reporter needs is filled.
func TestRunAgainstRealServer(t *testing.T) {
	addr := servertest.Start(t, server.Config{Token: "s3cret"})
	cfg := quick(addr)
	cfg.Token = "s3cret"
	cfg.Concurrency = []int{2}
	before := serverCounts(t, addr)
	res := run(t, cfg)
	after := serverCounts(t, addr)

	if res.Schema != results.Schema || res.StopReason != "completed" || res.Interrupted {
		t.Errorf("schema %q, stop reason %q, interrupted %v", res.Schema, res.StopReason, res.Interrupted)
	}
	if res.Env.Target != addr || res.Env.GOMAXPROCS < 1 || res.Env.GoVersion == "" || res.Env.GRPCVersion == "" {
		t.Errorf("env not stamped: %+v", res.Env)
	}
	if s := res.Settings; s.Iterations != 2 || s.Mode != results.ModeClosed || s.Repeat != 1 || len(s.Protocols) != 3 {
		t.Errorf("settings: %+v", s)
	}
	if want := len(api.Scenarios()) * len(api.Protocols()); len(res.Cells) != want {
		t.Fatalf("%d cells, want %d", len(res.Cells), want)
	}
	for _, c := range res.Cells {
		t.Run(c.Key(), func(t *testing.T) {
			if c.Errors != 0 || c.Calls != 6 {
				t.Errorf("calls %d, errors %d %v; want 6 (2 batches of 3), 0", c.Calls, c.Errors, c.ErrorClasses)
			}
			key := string(c.Protocol) + "/" + c.Scenario.Method()
			if served := after[key] - before[key]; served != float64(c.Calls+c.Errors) {
				t.Errorf("server counted %v %s calls, the run reported %d", served, key, c.Calls+c.Errors)
			}
			if c.Batches != 2 || c.BatchMS.Mean <= 0 {
				t.Errorf("batches %d, time per batch %+v", c.Batches, c.BatchMS)
			}
			if c.Connections < 1 || c.BytesPerCall.Sent <= 0 || c.BytesPerCall.Received <= 0 {
				t.Errorf("connections %d, bytes per call %+v", c.Connections, c.BytesPerCall)
			}
			if l := c.LatencyUS; !(l.P50 > 0 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
				t.Errorf("latency percentiles out of order: %+v", l)
			}
			if len(c.Distribution) == 0 || c.Distribution[len(c.Distribution)-1].US != c.LatencyUS.Max {
				t.Errorf("distribution %v does not end at the max %v", c.Distribution, c.LatencyUS.Max)
			}
			if c.ServerCPUUSPerCall == nil || c.ClientCPUUSPerCall < 0 {
				t.Errorf("CPU per call: client %v, server %v", c.ClientCPUUSPerCall, c.ServerCPUUSPerCall)
			}
			if (c.FirstRecordUS != nil) != (c.Scenario == api.Stream) {
				t.Errorf("first record %v for scenario %s", c.FirstRecordUS, c.Scenario)
			}
			if c.FirstRecordUS != nil && c.FirstRecordUS.Max > c.LatencyUS.Max {
				t.Errorf("first record %v after the whole call %v", c.FirstRecordUS.Max, c.LatencyUS.Max)
			}
			if c.Mode != results.ModeClosed || c.LatencyUncorrectedUS != nil {
				t.Errorf("mode %q, uncorrected latency %v", c.Mode, c.LatencyUncorrectedUS)
			}
			// Where the time goes: every adapter reports the time to the
			// last byte and the decode time, measured inside the call, so
			// their sum can never exceed the call's latency.
			if c.LastByteUS == nil || c.DecodeUS == nil {
				t.Fatalf("last byte %v, decode %v: not reported", c.LastByteUS, c.DecodeUS)
			}
			if lb, dec := c.LastByteUS, c.DecodeUS; !(lb.P50 > 0 && dec.Mean > 0 && lb.Mean+dec.Mean <= c.LatencyUS.Mean*1.0001) {
				t.Errorf("last byte %+v + decode %+v vs latency %+v", *lb, *dec, c.LatencyUS)
			}
		})
	}
	// Bytes on the wire: the large answer is about 220 KB of JSON and about
	// 100 KB of protobuf, whatever the transport.
	if j, p := cellOf(t, res, "large", "rest").BytesPerCall.Received, cellOf(t, res, "large", "rest-protobuf").BytesPerCall.Received; !(j > 200e3 && p > 95e3 && p < 110e3) {
		t.Errorf("large: %v bytes received over JSON, %v over protobuf", j, p)
	}
	assertRoundTrip(t, res)
}

// assertRoundTrip checks the JSON document reads back exactly.
func assertRoundTrip(t *testing.T, res *results.Result) {
	t.Helper()
	var buf bytes.Buffer
	if err := results.Write(&buf, res); err != nil {
		t.Fatal(err)
	}
	got, err := results.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, res) {
		t.Errorf("result does not round-trip through JSON:\n got %+v\nwant %+v", got, res)
	}
}

// --repeat 3: every cell measured three times, protocols and repeats
// interleaved, medians reported with intervals that contain them.
func TestRunRepeat(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	cfg := quick(addr)
	cfg.Protocols = []api.Protocol{api.REST, api.GRPC}
	cfg.Scenarios = []api.Scenario{api.Small}
	cfg.Batches = []int{5}
	cfg.Iterations = 3
	cfg.Repeat = 3
	var order []string
	cfg.Progress = func(p loadgen.Progress) {
		if p.Cell != "" {
			order = append(order, strings.Fields(p.Cell)[1])
		}
	}
	res := run(t, cfg)
	if want := []string{"rest", "grpc", "rest", "grpc", "rest", "grpc"}; !reflect.DeepEqual(order, want) {
		t.Errorf("measured in order %v, want %v (ABAB)", order, want)
	}
	if len(res.Cells) != 2 {
		t.Fatalf("%d cells, want 2", len(res.Cells))
	}
	for _, c := range res.Cells {
		if c.LastByteUS == nil || c.DecodeUS == nil {
			t.Errorf("%s: repeats lost last byte %v or decode %v", c.Key(), c.LastByteUS, c.DecodeUS)
		}
		if c.Calls != 3*3*5 {
			t.Errorf("%s: %d calls, want the total of 3 repeats of 15", c.Key(), c.Calls)
		}
		if len(c.Repeats) != 3 {
			t.Fatalf("%s: %d repeats", c.Key(), len(c.Repeats))
		}
		// Every figure a repeated cell has gets an interval whose median is
		// the cell's figure; these must all be there.
		for _, name := range []results.Figure{results.FigCallsPerS, results.FigLatencyP50, results.FigLatencyP90,
			results.FigLatencyP99, results.FigBatchMS, results.FigBytesSent, results.FigBytesReceived,
			results.FigClientCPU, results.FigServerCPU} {
			if _, ok := c.Figure(name); !ok {
				t.Errorf("%s: no %s", c.Key(), name)
			}
		}
		for _, fi := range results.Figures() {
			name := fi.Name
			v, has := c.Figure(name)
			if !has {
				continue
			}
			iv, ok := c.CI[name]
			if !ok {
				t.Errorf("%s: no interval for %s", c.Key(), name)
				continue
			}
			if iv.N != 3 || !(iv.Lo <= iv.Median && iv.Median <= iv.Hi) {
				t.Errorf("%s: %s interval %+v does not contain its median", c.Key(), name, iv)
			}
			if v != iv.Median {
				t.Errorf("%s: %s is %v, the interval's median %v", c.Key(), name, v, iv.Median)
			}
			lo, hi := c.Repeats[0][name], c.Repeats[0][name]
			for _, s := range c.Repeats {
				lo, hi = min(lo, s[name]), max(hi, s[name])
			}
			if iv.Median < lo || iv.Median > hi {
				t.Errorf("%s: %s median %v outside the repeats' range [%v, %v]", c.Key(), name, iv.Median, lo, hi)
			}
		}
	}
	assertRoundTrip(t, res)
}

// Config.Measured hands over each group of cells (scenario, batch,
// condition: all protocols and repeats) once, in plan order, with the same
// merged cells Result.Cells holds.
func TestRunMeasuredHook(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	cfg := quick(addr)
	cfg.Protocols = []api.Protocol{api.REST, api.GRPC}
	cfg.Scenarios = []api.Scenario{api.Small, api.Large}
	cfg.Batches = []int{2, 3}
	cfg.Iterations = 1
	cfg.Repeat = 2
	var groups [][]results.Cell
	var progressed int
	cfg.Progress = func(p loadgen.Progress) {
		if p.Cell != "" {
			progressed++
			// A group is handed over before the next group is measured.
			if want := (progressed - 1) / 4; len(groups) != want {
				t.Errorf("before measurement %d: %d groups handed over, want %d", progressed, len(groups), want)
			}
		}
	}
	cfg.Measured = func(cells []results.Cell) { groups = append(groups, cells) }
	res := run(t, cfg)
	if len(groups) != 4 {
		t.Fatalf("%d groups, want 4 (2 scenarios x 2 batches)", len(groups))
	}
	var all []results.Cell
	for i, g := range groups {
		if len(g) != 2 || g[0].Protocol != api.REST || g[1].Protocol != api.GRPC || len(g[0].Repeats) != 2 {
			t.Errorf("group %d: %d cells, want rest and grpc merged over 2 repeats", i, len(g))
		}
		for _, c := range g {
			if c.Scenario != g[0].Scenario || c.Batch != g[0].Batch || c.Condition != g[0].Condition {
				t.Errorf("group %d mixes %s and %s", i, g[0].Key(), c.Key())
			}
		}
		all = append(all, g...)
	}
	if !reflect.DeepEqual(all, res.Cells) {
		t.Errorf("the groups handed over differ from Result.Cells:\n got %+v\nwant %+v", all, res.Cells)
	}
}

// An unreachable target fails before any work, with a clear message.
func TestRunUnreachableTarget(t *testing.T) {
	res, err := loadgen.Run(context.Background(), quick("127.0.0.1:1"))
	if err == nil || res != nil || !strings.Contains(err.Error(), "127.0.0.1:1") || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("Run = %v, %v; want a nil result and an 'unreachable' error naming the target", res, err)
	}
}

func TestConfigValidate(t *testing.T) {
	good := loadgen.Config{Target: "127.0.0.1:1"}
	if err := good.Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
	for name, mut := range map[string]func(*loadgen.Config){
		"no target":          func(c *loadgen.Config) { c.Target = "" },
		"unknown protocol":   func(c *loadgen.Config) { c.Protocols = []api.Protocol{"soap"} },
		"unknown scenario":   func(c *loadgen.Config) { c.Scenarios = []api.Scenario{"huge"} },
		"twice":              func(c *loadgen.Config) { c.Scenarios = []api.Scenario{"small", "small"} },
		"batch 0":            func(c *loadgen.Config) { c.Batches = []int{0} },
		"concurrency 0":      func(c *loadgen.Config) { c.Concurrency = []int{1, 0} },
		"negative rate":      func(c *loadgen.Config) { c.Rate = -1 },
		"negative duration":  func(c *loadgen.Config) { c.Duration = -1 },
		"negative iteration": func(c *loadgen.Config) { c.Iterations = -1 },
		"negative conns":     func(c *loadgen.Config) { c.Connections = -1 },
		"negative repeat":    func(c *loadgen.Config) { c.Repeat = -1 },
	} {
		c := good
		mut(&c)
		if err := c.Validate(); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: Validate() = %v, want a one-line error", name, err)
		}
		if _, err := loadgen.Run(context.Background(), c); err == nil {
			t.Errorf("%s: Run accepted the config", name)
		}
	}
}

// --connections: gRPC opens exactly N ClientConns; HTTP/1.1 opens one per
// worker by default, and never more than the cap. Counted at the dialer.
func TestRunConnections(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	for _, tc := range []struct {
		proto       api.Protocol
		connections int
		want        int
	}{
		{api.GRPC, 0, 1},
		{api.GRPC, 3, 3},
		{api.REST, 0, 4},
		{api.RESTProtobuf, 2, 2},
	} {
		cfg := quick(addr)
		cfg.Protocols = []api.Protocol{tc.proto}
		cfg.Scenarios = []api.Scenario{api.Small}
		cfg.Concurrency = []int{4}
		cfg.Connections = tc.connections
		cfg.Iterations, cfg.Duration = 0, 200*time.Millisecond
		res := run(t, cfg)
		if c := res.Cells[0]; c.Connections != tc.want || c.Errors != 0 {
			t.Errorf("%s --connections %d: %d connections opened (%d errors), want %d", tc.proto, tc.connections, c.Connections, c.Errors, tc.want)
		}
	}
}

// Only narrows a config to each of its cells: the plan of the narrowed
// config is exactly that cell.
func TestConfigOnly(t *testing.T) {
	cfg := loadgen.Config{Target: "127.0.0.1:1", Scenarios: []api.Scenario{api.Small, api.Large}, Records: []int{10, 100},
		Concurrency: []int{1, 4}, Batches: []int{5}, Repeat: 3, Compress: []string{loadgen.CompressNone, loadgen.CompressGzip},
		TLS: []bool{false, true}}
	l, err := link.Parse("100mbit/20ms")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Links = []link.Spec{{}, l}
	cells := cfg.Cells()
	// small: 2 links x 2 concurrency x 2 compressions x 2 TLS x 3
	// protocols; large: also x 2 sizes.
	if len(cells) != 2*(2*2*2*3+2*2*2*2*3) {
		t.Fatalf("%d cells", len(cells))
	}
	for _, k := range cells {
		if got := cfg.Only(k).Cells(); len(got) != 1 || got[0] != k {
			t.Errorf("Only(%s).Cells() = %v", k.Key(), got)
		}
	}
}
