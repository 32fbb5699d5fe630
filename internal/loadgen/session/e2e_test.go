package session_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/loadgen/loadgentest"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/target"
	"github.com/meteorbench/meteorbench/internal/testmode"
	"github.com/meteorbench/meteorbench/internal/timing"
)

// Every scenario over every protocol against the real server: the counts
// the run reports match the server's own counters, and every figure a
// reporter needs is filled.
func TestRunAgainstRealServer(t *testing.T) {
	addr := servertest.Start(t, server.Config{Token: "s3cret"})
	cfg := quick(addr)
	cfg.Token = "s3cret"
	cfg.Concurrency = []int{2}
	cfg.Scenarios = shortScenarios(t)
	before := serverCounts(t, addr)
	res := run(t, cfg)
	after := serverCounts(t, addr)

	if res.Schema != results.Schema || res.Stop.Reason != results.StopCompleted || res.Interrupted {
		t.Errorf("schema %q, stop reason %q, interrupted %v", res.Schema, res.Stop, res.Interrupted)
	}
	if res.Env.Target != addr || res.Env.GOMAXPROCS < 1 || res.Env.GoVersion == "" || res.Env.GRPCVersion == "" {
		t.Errorf("env not stamped: %+v", res.Env)
	}
	if s := res.Settings; s.Iterations != 2 || s.Mode != results.ModeClosed || s.Repeat != 1 || len(s.Protocols) != 3 {
		t.Errorf("settings: %+v", s)
	}
	if want := len(cfg.Scenarios) * len(api.DefaultProtocols()); len(res.Cells) != want {
		t.Fatalf("%d cells, want %d", len(res.Cells), want)
	}
	for _, c := range res.Cells {
		t.Run(c.Key(), func(t *testing.T) {
			if c.Errors != 0 || c.Calls != 6 {
				t.Errorf("calls %d, errors %d %v; want 6 (2 batches of 3), 0", c.Calls, c.Errors, c.ErrorClasses)
			}
			key := string(c.Protocol) + "/" + c.Scenario.Method()
			// One more: the contract probe before the first cell.
			if served := after[key] - before[key]; served != float64(c.Calls+c.Errors+1) {
				t.Errorf("server counted %v %s calls, the run reported %d and one probe", served, key, c.Calls+c.Errors)
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
	// Bytes on the wire (with the large cells: not under -short): the large
	// answer is about 220 KB of JSON and about 100 KB of protobuf, whatever
	// the transport.
	if slices.Contains(cfg.Scenarios, api.Large) {
		if j, p := cellOf(t, res, "large", "rest").BytesPerCall.Received, cellOf(t, res, "large", "rest-protobuf").BytesPerCall.Received; !(j > 200e3 && p > 95e3 && p < 110e3) {
			t.Errorf("large: %v bytes received over JSON, %v over protobuf", j, p)
		}
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
	cfg.Progress = func(p plan.Progress) {
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
			if name == results.FigBytesTotal {
				// The sum of two medians, each with its interval.
				if ok {
					t.Errorf("%s: an interval for %s, the sum of sent and received", c.Key(), name)
				}
				continue
			}
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
	cfg.Progress = func(p plan.Progress) {
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
	res, err := session.Run(context.Background(), quick("127.0.0.1:1"))
	if err == nil || res != nil || !strings.Contains(err.Error(), "127.0.0.1:1") || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("Run = %v, %v; want a nil result and an 'unreachable' error naming the target", res, err)
	}
}

func TestConfigValidate(t *testing.T) {
	good := plan.Config{Target: target.One("127.0.0.1:1")}
	if err := good.Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
	for name, mut := range map[string]func(*plan.Config){
		"no target":          func(c *plan.Config) { c.Target = target.Targets{} },
		"unknown protocol":   func(c *plan.Config) { c.Protocols = []api.Protocol{"soap"} },
		"unknown scenario":   func(c *plan.Config) { c.Scenarios = []api.Scenario{"huge"} },
		"twice":              func(c *plan.Config) { c.Scenarios = []api.Scenario{"small", "small"} },
		"batch 0":            func(c *plan.Config) { c.Batches = []int{0} },
		"concurrency 0":      func(c *plan.Config) { c.Concurrency = []int{1, 0} },
		"negative rate":      func(c *plan.Config) { c.Rate = -1 },
		"negative duration":  func(c *plan.Config) { c.Duration = -1 },
		"negative iteration": func(c *plan.Config) { c.Iterations = -1 },
		"negative conns":     func(c *plan.Config) { c.Connections = []int{-1} },
		"negative repeat":    func(c *plan.Config) { c.Repeat = -1 },
	} {
		c := good
		mut(&c)
		if err := c.Validate(); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: Validate() = %v, want a one-line error", name, err)
		}
		if _, err := session.Run(context.Background(), c); err == nil {
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
		if tc.connections > 0 {
			cfg.Connections = []int{tc.connections}
		}
		cfg.Iterations, cfg.Duration = 0, 200*time.Millisecond
		// Retried: under the race detector in CI a 200 ms cell once
		// counted 0 (and once 3) connections for rest-protobuf's cap of 2
		// (2026-12-06), not reproduced alone; every attempt is logged.
		timing.Retry(t, 3, func(attempt int) []string {
			res := run(t, cfg)
			c := res.Cells[0]
			t.Logf("attempt %d: %s --connections %d: %d connections opened, %d calls, %d errors", attempt, tc.proto, tc.connections, c.Connections, c.Calls, c.Errors)
			if c.Connections != tc.want || c.Errors != 0 {
				return []string{fmt.Sprintf("%s --connections %d: %d connections opened (%d errors), want %d", tc.proto, tc.connections, c.Connections, c.Errors, tc.want)}
			}
			return nil
		})
	}
}

// A session measures any cell of its plan by its key: each cell of a
// sweep (links, compression, TLS off, payload sizes), measured through
// one session, comes back with that key and its calls, and a key with a
// traffic that does not read is refused, not measured as something else.
func TestMeasureEveryCell(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	cfg := quick(addr)
	cfg.Scenarios = []api.Scenario{api.Small, api.Large}
	cfg.Records, cfg.Batches, cfg.Concurrency = []int{10}, []int{2}, []int{1, 2}
	cfg.Compress = []string{plan.CompressNone, plan.CompressGzip}
	l, err := link.Parse("1gbit/1ms")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Links = []link.Spec{{}, l}
	cells := cfg.Cells()
	// small: 2 links x 2 concurrency x 2 compressions x 3 protocols;
	// large: the same (one size).
	if len(cells) != 2*(2*2*2*3) {
		t.Fatalf("%d cells", len(cells))
	}
	ctx := context.Background()
	s, err := session.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, k := range cells {
		c, err := s.Measure(ctx, k, plan.Bounds{Iterations: 2})
		if err != nil {
			t.Fatalf("%s: %v", k.Key(), err)
		}
		if c.CellKey != k || c.Calls != 2*2 || c.Errors != 0 {
			t.Errorf("Measure(%s): cell %s, %d calls, %d errors, want the key's cell with 4 calls", k.Key(), c.Key(), c.Calls, c.Errors)
		}
	}
	bad := cells[0]
	bad.Scenario, bad.Mix = results.MixScenario, "small=x"
	if _, err := s.Measure(ctx, bad, plan.Bounds{Iterations: 1}); err == nil || !strings.Contains(err.Error(), "small=x") {
		t.Errorf("a key whose traffic does not read: %v, want an error naming it", err)
	}
}

// Config.Compress none,gzip: every cell in both conditions, all calls
// valid (the adapters inflate what they asked for), gzip cells named
// ".../gzip", connections kept open, and the large answers far fewer bytes
// on the wire, received, while small and post requests and answers are
// still what they are.
func TestRunCompress(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	cfg := quick(addr)
	cfg.Scenarios = []api.Scenario{api.Small, api.Large, api.Stream, api.Post}
	// Under the race detector (CI's race step) gzip of the large answers
	// took 48 s, and 10 CPU-s with 6 calls a cell: one call a cell, large
	// and post only; the normal step runs all.
	if testmode.Short(t, "large and post only, one call a cell") {
		cfg.Scenarios = []api.Scenario{api.Large, api.Post}
		cfg.Batches, cfg.Iterations = []int{1}, 1
	}
	cfg.Compress = []string{plan.CompressNone, plan.CompressGzip}
	res := run(t, cfg)
	if got, want := len(res.Cells), len(cfg.Scenarios)*len(api.DefaultProtocols())*2; got != want {
		t.Fatalf("%d cells, want %d", got, want)
	}
	if len(res.Settings.Compress) != 2 {
		t.Errorf("settings: compress %v", res.Settings.Compress)
	}
	cells := map[string]*results.Cell{}
	for i := range res.Cells {
		c := &res.Cells[i]
		cells[c.Key()] = c
		if c.Errors != 0 || c.Calls != int64(cfg.Batches[0]*cfg.Iterations) {
			t.Errorf("%s: %d calls, %d errors %v", c.Key(), c.Calls, c.Errors, c.ErrorExamples)
		}
		if want := 1; c.Connections != want {
			t.Errorf("%s: %d connections, want %d (kept open across calls)", c.Key(), c.Connections, want)
		}
	}
	for _, sc := range cfg.Scenarios {
		if sc == api.Small {
			continue
		}
		for _, p := range api.DefaultProtocols() {
			plain := cells[results.CellKey{Scenario: sc, Protocol: p, Batch: cfg.Batches[0], Condition: results.Condition{Concurrency: 1}}.Key()]
			gz := cells[results.CellKey{Scenario: sc, Protocol: p, Batch: cfg.Batches[0], Condition: results.Condition{Concurrency: 1, Compress: "gzip"}}.Key()]
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
		cfg := plan.Config{Target: target.One("127.0.0.1:1"), Compress: zs}
		if err := cfg.Validate(); err == nil {
			t.Errorf("compress %q: no error", zs)
		}
	}
}

// --records sweeps the payload size against the real server: every
// payload scenario gets one cell per size, small exactly one, every answer
// validated against its size, and the bytes per call grow with it.
func TestRunRecordsAgainstRealServer(t *testing.T) {
	// 2500 records uploaded as JSON are about 550 KB: far below the
	// server's default 8 MiB body limit.
	addr := servertest.Start(t, server.Config{})
	cfg := quick(addr)
	cfg.Records = []int{1, 10, 2500}
	if testmode.Short(t, "up to 250 records (under the race detector 2500 took 28 s)") {
		cfg.Records = []int{1, 10, 250}
	}
	before := serverCounts(t, addr)
	res := run(t, cfg)
	after := serverCounts(t, addr)

	if !slices.Equal(res.Settings.Records, cfg.Records) {
		t.Errorf("settings records %v, want %v", res.Settings.Records, cfg.Records)
	}
	want := len(api.DefaultProtocols()) * (1 + 3*len(cfg.Records)) // small once, the rest per size
	if len(res.Cells) != want {
		t.Fatalf("%d cells, want %d", len(res.Cells), want)
	}
	type side struct {
		sc api.Scenario
		p  api.Protocol
	}
	bytesBy := map[side][]results.Bytes{}
	for _, c := range res.Cells {
		if c.Errors != 0 || c.Calls != 6 {
			t.Errorf("%s: calls %d, errors %d %v %v; want 6, 0", c.Key(), c.Calls, c.Errors, c.ErrorClasses, c.ErrorExamples)
		}
		switch {
		case c.Scenario == api.Small && c.Records != 0:
			t.Errorf("%s: small measured with %d records; it has no payload", c.Key(), c.Records)
		case c.Scenario != api.Small && !slices.Contains(cfg.Records, c.Records):
			t.Errorf("%s: records %d, want one of %v", c.Key(), c.Records, cfg.Records)
		}
		bytesBy[side{c.Scenario, c.Protocol}] = append(bytesBy[side{c.Scenario, c.Protocol}], c.BytesPerCall)
	}
	for s, bs := range bytesBy {
		if s.sc == api.Small {
			continue
		}
		for i := 1; i < len(bs); i++ { // cells come in plan order: 1, 10, 2500 (or 250)
			grew := bs[i].Received > bs[i-1].Received
			if s.sc == api.Post {
				grew = bs[i].Sent > bs[i-1].Sent
			}
			if !grew {
				t.Errorf("%s/%s: bytes per call %+v did not grow with the records", s.sc, s.p, bs)
			}
		}
	}
	for _, p := range api.DefaultProtocols() {
		for _, sc := range []api.Scenario{api.Large, api.Stream, api.Post} {
			key := string(p) + "/" + sc.Method()
			if served := after[key] - before[key]; served != 19 {
				t.Errorf("server counted %v %s calls, want 19 (6 per size, one probe)", served, key)
			}
		}
	}
}

// An answer of the wrong size is an invalid response: the test server
// ignores the size asked for and answers its 1000 records.
func TestRunRecordsWrongCount(t *testing.T) {
	srv := loadgentest.Start(t, loadgentest.Config{})
	cfg := quick(srv.Addr)
	cfg.Scenarios = []api.Scenario{api.Large, api.Stream}
	cfg.Records = []int{10}
	if _, err := session.Run(context.Background(), cfg); !errors.Is(err, session.ErrNotContract) || !strings.Contains(err.Error(), "1000 records, want 10") {
		t.Fatalf("a target that ignores the size asked for: %v, want it refused before measuring, naming what the probe got", err)
	}
	cfg.NoProbe = true // measured anyway: each call is an invalid response
	res := run(t, cfg)
	if len(res.Cells) != 6 {
		t.Fatalf("%d cells, want 6", len(res.Cells))
	}
	for _, c := range res.Cells {
		if c.Records != 10 || c.Calls != 0 || c.ErrorClasses["invalid-response"] != 6 {
			t.Errorf("%s: records %d, %d successes, errors %v; want 10, 0 and 6 invalid-response", c.Key(), c.Records, c.Calls, c.ErrorClasses)
		}
		wantMsg := "1000 records, want 10"
		if c.Scenario == api.Stream {
			wantMsg = "more than 10 records"
		}
		if got := c.ErrorExamples["invalid-response"]; got != wantMsg {
			t.Errorf("%s: example %q, want %q", c.Key(), got, wantMsg)
		}
	}
}

func TestConfigRecords(t *testing.T) {
	for _, bad := range [][]int{{0}, {-1}, {api.MaxRecords + 1}, {10, 10}} {
		cfg := plan.Config{Target: target.One("127.0.0.1:1"), Records: bad}
		if err := cfg.Validate(); err == nil {
			t.Errorf("records %v: no error", bad)
		}
	}
	cfg := plan.Config{Target: target.One("127.0.0.1:1"), Records: []int{1, api.MaxRecords}}
	if err := cfg.Validate(); err != nil {
		t.Errorf("records %v: %v", cfg.Records, err)
	}
}

// Three segments of an open-loop plan bounded by count make exactly the
// plan's calls between them, each at a third of the rate; the cells keep
// their histograms, and --start-at is waited for and its offset recorded.
func TestRunSegmentsOpenLoop(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	total := int64(0)
	for i := 1; i <= 3; i++ {
		cfg := quick(addr)
		cfg.Protocols = []api.Protocol{api.GRPC}
		cfg.Scenarios = []api.Scenario{api.Small}
		cfg.Batches = []int{5}
		cfg.Iterations = 4 // 20 calls: 7, 7, 6
		cfg.Rate = 400
		cfg.Segment = results.Segment{Index: i, Count: 3}
		cfg.StartAt = time.Now().Add(50 * time.Millisecond)
		res := run(t, cfg)
		if s := res.Settings.Segment; s == nil || *s != cfg.Segment || res.Settings.StartAt == nil || res.Settings.Rate != 400 || res.Settings.Iterations != 4 {
			t.Fatalf("settings: segment %v, start at %v, rate %v, iterations %d", s, res.Settings.StartAt, res.Settings.Rate, res.Settings.Iterations)
		}
		if off := res.Env.StartOffsetUS; off == nil || *off < 0 {
			t.Errorf("start offset %v: want how late the first cell started (>= 0)", off)
		}
		c := cellOf(t, res, api.Small, api.GRPC)
		want := []int64{7, 7, 6}[i-1]
		if c.Calls != want || c.Errors != 0 || c.RateRequested != 400 {
			t.Errorf("segment %d: %d calls, %d errors, key rate %v; want %d calls at the plan's key rate 400", i, c.Calls, c.Errors, c.RateRequested, want)
		}
		if c.Share == nil || c.Share.Rate != 400.0/3 || c.Share.Iterations != int(want) || c.Share.Empty {
			t.Errorf("segment %d: share %+v", i, c.Share)
		}
		h, err := results.DecodeHistogram(c.Histograms.Latency)
		if err != nil || h.TotalCount() != c.Calls {
			t.Errorf("segment %d: latency histogram %v (%v), want %d values", i, h, err, c.Calls)
		}
		if u, err := results.DecodeHistogram(c.Histograms.Uncorrected); err != nil || u.TotalCount() != c.Calls {
			t.Errorf("segment %d: uncorrected histogram: %v", i, err)
		}
		total += c.Calls
	}
	if total != 20 {
		t.Errorf("three segments made %d calls, the plan 20", total)
	}
}

// A closed-loop segment with no worker of a cell measures nothing there,
// validly, and says so.
func TestRunSegmentEmptyShare(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	cfg := quick(addr)
	cfg.Protocols = []api.Protocol{api.REST}
	cfg.Scenarios = []api.Scenario{api.Small}
	cfg.Concurrency = []int{1}
	cfg.Segment = results.Segment{Index: 1, Count: 2} // 1 worker: segment 2 has it
	res := run(t, cfg)
	c := cellOf(t, res, api.Small, api.REST)
	if c.Calls != 0 || c.Errors != 0 || c.Share == nil || !c.Share.Empty || c.Histograms != nil || len(c.Warnings) != 1 {
		t.Fatalf("empty share: %d calls, share %+v, histograms %v, warnings %q", c.Calls, c.Share, c.Histograms, c.Warnings)
	}
	cfg.Segment.Index = 2
	c = cellOf(t, run(t, cfg), api.Small, api.REST)
	if c.Calls != 6 || c.Share.Workers != 1 || c.Share.Iterations != 2 {
		t.Errorf("segment 2/2: %d calls, share %+v; want the one worker and both iterations (6 calls)", c.Calls, c.Share)
	}
}

// A run with a --start-at ahead waits for a target that does not answer
// yet (an orchestrator starts the generators with the server), asking
// again until the start time; one still down at the start time fails
// then, not before and not later.
func TestRunAwaitsTargetUntilStartAt(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens here until the server comes up

	cfg := quick(addr)
	cfg.Protocols = []api.Protocol{api.GRPC, api.REST}
	cfg.Scenarios = []api.Scenario{api.Small}
	cfg.StartAt = time.Now().Add(4 * time.Second)
	up := make(chan struct{})
	go func() {
		defer close(up)
		time.Sleep(time.Second)
		srv, err := server.New(server.Config{})
		if err != nil {
			t.Error(err)
			return
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("listen on %s again: %v", addr, err)
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx, ln) }()
		t.Cleanup(func() { cancel(); <-done })
	}()
	res, err := session.Run(context.Background(), cfg)
	<-up
	if err != nil {
		t.Fatalf("a target up 1 s after the run began, --start-at 4 s ahead: %v", err)
	}
	for _, c := range res.Cells {
		if c.Calls == 0 || c.Errors != 0 {
			t.Errorf("%s: %d calls, %d errors", c.Key(), c.Calls, c.Errors)
		}
	}
	if off := res.Env.StartOffsetUS; off == nil || *off < 0 {
		t.Errorf("start offset %v", off)
	}

	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Target = target.One(ln.Addr().String())
	ln.Close()
	cfg.StartAt = time.Now().Add(1500 * time.Millisecond)
	began := time.Now()
	_, err = session.Run(context.Background(), cfg)
	took := time.Since(began)
	t.Logf("a target never up, --start-at 1.5 s ahead: %v after %v", err, took.Round(time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("a target never up: %v, want unreachable", err)
	}
	if took < time.Second || took > 1500*time.Millisecond+session.HealthTimeout+2*time.Second {
		t.Errorf("a target never up failed after %v, want at --start-at (1.5 s)", took)
	}
}
