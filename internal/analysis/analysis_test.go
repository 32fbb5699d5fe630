package analysis_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/results"
)

// cell is a hand-made measured cell.
type cell struct {
	p api.Protocol
	s api.Scenario
	b int
	c results.Condition
	// figures
	p50, p99, mean, callsPerS, sent, recv, clientCPU, serverCPU float64
	decode                                                      float64 // mean µs, 0: not reported
	calls                                                       int64
	achieved                                                    float64
}

func (c cell) build() results.Cell {
	if c.c.Concurrency == 0 {
		c.c.Concurrency = 1
	}
	calls := c.calls
	if calls == 0 {
		calls = 1000
	}
	out := results.Cell{
		CellKey:      results.CellKey{Scenario: c.s, Protocol: c.p, Batch: c.b, Condition: c.c},
		Calls:        calls,
		CallsPerS:    c.callsPerS,
		LatencyUS:    results.Latency{P50: c.p50, P99: c.p99, Mean: c.mean},
		BytesPerCall: results.Bytes{Sent: c.sent, Received: c.recv},
		RateAchieved: c.achieved,
	}
	out.ClientCPUUSPerCall = c.clientCPU
	if c.serverCPU > 0 {
		v := c.serverCPU
		out.ServerCPUUSPerCall = &v
	}
	if c.decode > 0 {
		out.DecodeUS = &results.Latency{Mean: c.decode}
	}
	return out
}

func result(cs ...results.Cell) *results.Result {
	return &results.Result{Schema: results.Schema, Cells: cs}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func ratioOf(t *testing.T, vs results.Versus, f results.Figure) results.Ratio {
	t.Helper()
	for _, r := range vs.Ratios {
		if r.Figure == f {
			return r
		}
	}
	t.Fatalf("%s: no ratio of %s in %+v", vs.Protocol, f, vs.Ratios)
	return results.Ratio{}
}

// Every number of a verdict computed from a hand-made result: two batch
// sizes pooled into one verdict, ratios, the encoding share and the line.
func TestVerdictNumbers(t *testing.T) {
	L := api.Large
	r := result(
		cell{p: api.REST, s: L, b: 100, p50: 4000, p99: 8000, mean: 4200, callsPerS: 250, sent: 120, recv: 219650, clientCPU: 2900, serverCPU: 2300}.build(),
		cell{p: api.RESTProtobuf, s: L, b: 100, p50: 1800, p99: 3000, mean: 1900, callsPerS: 540, sent: 150, recv: 99960, clientCPU: 900, serverCPU: 780}.build(),
		cell{p: api.GRPC, s: L, b: 100, p50: 1000, p99: 2000, mean: 1100, callsPerS: 1000, sent: 65, recv: 99900, clientCPU: 820, serverCPU: 700}.build(),
		cell{p: api.REST, s: L, b: 200, p50: 4400, p99: 8800, mean: 4500, callsPerS: 227, sent: 120, recv: 219650, clientCPU: 2900, serverCPU: 2300}.build(),
		cell{p: api.RESTProtobuf, s: L, b: 200, p50: 2000, p99: 3300, mean: 2100, callsPerS: 500, sent: 150, recv: 99960, clientCPU: 900, serverCPU: 780}.build(),
		cell{p: api.GRPC, s: L, b: 200, p50: 1100, p99: 2200, mean: 1200, callsPerS: 909, sent: 65, recv: 99900, clientCPU: 820, serverCPU: 700}.build(),
	)
	vs := analysis.Verdicts(r)
	if len(vs) != 1 {
		t.Fatalf("%d verdicts, want 1 (batches pooled): %+v", len(vs), vs)
	}
	v := vs[0]
	if v.Scenario != L || v.Baseline != api.REST || !slices.Equal(v.Batches, []int{100, 200}) || len(v.Versus) != 2 {
		t.Fatalf("verdict %+v", v)
	}
	g := v.Versus[1]
	if g.Protocol != api.GRPC || v.Versus[0].Protocol != api.RESTProtobuf {
		t.Fatalf("versus order %s, %s; want rest-protobuf, grpc", v.Versus[0].Protocol, g.Protocol)
	}
	for _, tc := range []struct {
		f      results.Figure
		want   float64
		better bool
	}{
		{results.FigLatencyP50, 0.25, true},                        // 1000/4000 and 1100/4400
		{results.FigCallsPerS, (1000.0/250 + 909.0/227) / 2, true}, // the median of two paired ratios
		{results.FigBytesTotal, 99965.0 / 219770, true},            // sent + received
		{results.FigServerCPU, 700.0 / 2300, true},                 // same in both batches
		{results.FigLatencyP99, 0.25, true},                        // 2000/8000, 2200/8800
		{results.FigClientCPU, 820.0 / 2900, true},                 // same in both batches
	} {
		got := ratioOf(t, g, tc.f)
		if !near(got.Ratio, tc.want) || got.Better != tc.better || got.N != 2 || got.Significance != results.Untested || got.P != nil {
			t.Errorf("%s: %+v, want ratio %v better %v, n 2, untested", tc.f, got, tc.want, tc.better)
		}
	}
	// Encoding share of the p50 gain, from the medians over batches:
	// REST 4200, rest-protobuf 1900, gRPC 1050.
	if g.EncodingShare == nil || !near(*g.EncodingShare, (4200.0-1900)/(4200-1050)) {
		t.Errorf("encoding share %v, want %v", g.EncodingShare, (4200.0-1900)/(4200-1050))
	}
	want := "large: gRPC 4.0x faster than REST (p50), 4.0x more calls/s, 2.2x fewer bytes, 3.3x less server CPU; 73% of the gain from the encoding (rest-protobuf)"
	if v.Summary != want {
		t.Errorf("summary\n got %q\nwant %q", v.Summary, want)
	}
	if len(v.Notes) != 0 {
		t.Errorf("notes %q, want none", v.Notes)
	}
}

// repeated builds a cell with k repeats whose p50 and calls/s follow f(i).
func repeated(p api.Protocol, k int, p50 func(i int) float64) results.Cell {
	c := cell{p: p, s: api.Small, b: 100, p50: p50(k / 2), mean: p50(k / 2), callsPerS: 1e6 / p50(k/2), sent: 100, recv: 100}.build()
	for i := range k {
		c.Repeats = append(c.Repeats, results.Sample{
			results.FigLatencyP50: p50(i), results.FigCallsPerS: 1e6 / p50(i), results.FigBytesTotal: 200,
		})
	}
	return c
}

// Three repeats can never pass the U test: the label says so instead of
// "not significant".
func TestThreeRepeatsTooFew(t *testing.T) {
	r := result(
		repeated(api.REST, 3, func(i int) float64 { return 100 + float64(i) }),
		repeated(api.GRPC, 3, func(i int) float64 { return 200 + float64(i) }),
	)
	v := analysis.Verdicts(r)[0]
	p50 := ratioOf(t, v.Versus[0], results.FigLatencyP50)
	if p50.Significance != results.TooFew || p50.P != nil || p50.N != 3 || p50.Lo == nil {
		t.Errorf("p50 ratio %+v, want too few to test, n 3, with an interval", p50)
	}
	if !slices.Contains(v.Notes, "3 repeats: too few to test, use --repeat 5") {
		t.Errorf("notes %q", v.Notes)
	}
	if strings.Contains(v.Summary, "significant") {
		t.Errorf("summary %q claims a significance", v.Summary)
	}
}

// Five repeats with a clear difference are significant; the interval
// brackets the ratio and reads as a factor.
func TestFiveRepeatsSignificant(t *testing.T) {
	r := result(
		repeated(api.REST, 5, func(i int) float64 { return 100 + float64(i) }),
		repeated(api.GRPC, 5, func(i int) float64 { return 200 + 2*float64(i) }),
	)
	v := analysis.Verdicts(r)[0]
	p50 := ratioOf(t, v.Versus[0], results.FigLatencyP50)
	if p50.Significance != results.Significant || p50.P == nil || *p50.P >= 0.05 || p50.Better || !near(p50.Ratio, 2) {
		t.Errorf("p50 ratio %+v, want significant, worse, 2.0", p50)
	}
	if !strings.HasPrefix(v.Summary, "small: gRPC 2.0x slower than REST (p50)") {
		t.Errorf("summary %q", v.Summary)
	}
	// Identical sides: five repeats, no difference.
	same := result(
		repeated(api.REST, 5, func(i int) float64 { return 100 + float64(i%3) }),
		repeated(api.GRPC, 5, func(i int) float64 { return 100 + float64((i+1)%3) }),
	)
	p50 = ratioOf(t, analysis.Verdicts(same)[0].Versus[0], results.FigLatencyP50)
	if p50.Significance != results.NotSignificant || p50.P == nil {
		t.Errorf("same sides: %+v, want not significant with a p-value", p50)
	}
	if s := analysis.Describe(p50); !strings.HasPrefix(s, "p50 within noise (±") {
		t.Errorf("Describe = %q, want p50 within noise (±N%%)", s)
	}
}

// An open-loop cell far below its requested rate gets no latency verdict.
func TestSaturatedOpenLoop(t *testing.T) {
	cond := results.Condition{Concurrency: 4, RateRequested: 100000}
	r := result(
		cell{p: api.REST, s: api.Small, b: 100, c: cond, p50: 1.4e6, mean: 1.4e6, callsPerS: 10200, achieved: 10200, sent: 100, recv: 150}.build(),
		cell{p: api.GRPC, s: api.Small, b: 100, c: cond, p50: 1.45e6, mean: 1.45e6, callsPerS: 5100, achieved: 5100, sent: 60, recv: 50}.build(),
	)
	v := analysis.Verdicts(r)[0]
	g := v.Versus[0]
	for _, rt := range g.Ratios {
		if rt.Figure == results.FigLatencyP50 || rt.Figure == results.FigLatencyP99 {
			t.Errorf("saturated cell has a latency ratio %+v", rt)
		}
	}
	if want := "saturated: REST reached 10,200 of 100,000 calls/s, gRPC reached 5,100 of 100,000 calls/s"; g.Saturated != want {
		t.Errorf("saturated %q, want %q", g.Saturated, want)
	}
	if want := "small · concurrency 4 · open loop at 100,000 calls/s: " + g.Saturated + ": no latency verdict; gRPC 2.0x fewer calls/s, 2.3x fewer bytes"; v.Summary != want {
		t.Errorf("summary %q", v.Summary)
	}
	// The same cells at a rate both kept: latency compared, calls/s not
	// (both achieved the rate by design).
	easy := results.Condition{Concurrency: 4, RateRequested: 1000}
	r = result(
		cell{p: api.REST, s: api.Small, b: 100, c: easy, p50: 100, mean: 100, callsPerS: 1000, achieved: 1000, sent: 100, recv: 150}.build(),
		cell{p: api.GRPC, s: api.Small, b: 100, c: easy, p50: 200, mean: 200, callsPerS: 1000, achieved: 995, sent: 60, recv: 50}.build(),
	)
	g = analysis.Verdicts(r)[0].Versus[0]
	if g.Saturated != "" || ratioOf(t, g, results.FigLatencyP50).Ratio != 2 {
		t.Errorf("easy rate: %+v", g)
	}
	for _, rt := range g.Ratios {
		if rt.Figure == results.FigCallsPerS {
			t.Errorf("open loop at an easy rate has a calls/s ratio %+v", rt)
		}
	}
}

// A protocol without a successful call is named, not compared; the client's
// decoding dominating a latency is said when the client spent that much CPU
// (gRPC's 400 µs of decoding in 1.7 ms would not be said anyway).
func TestNotesNoCallsAndDecode(t *testing.T) {
	r := result(
		cell{p: api.REST, s: api.Large, b: 100, p50: 6200, mean: 6300, callsPerS: 160, sent: 120, recv: 219650, decode: 5300, clientCPU: 5800}.build(),
		cell{p: api.RESTProtobuf, s: api.Large, b: 100, calls: -1}.build(),
		cell{p: api.GRPC, s: api.Large, b: 100, p50: 1600, mean: 1700, callsPerS: 620, sent: 65, recv: 99900, decode: 400}.build(),
	)
	r.Cells[1].Calls = 0
	v := analysis.Verdicts(r)[0]
	if len(v.Versus) != 1 || v.Versus[0].Protocol != api.GRPC || v.Versus[0].EncodingShare != nil {
		t.Fatalf("versus %+v", v.Versus)
	}
	wantNotes := []string{
		"REST+protobuf: no successful call",
		"REST: the client's decoding takes 5.30 ms of the 6.30 ms mean latency (84%; wall time, within the client's 5.80 ms of CPU per call): the client, not the server or the wire, dominates it",
	}
	if !slices.Equal(v.Notes, wantNotes) {
		t.Errorf("notes\n got %q\nwant %q", v.Notes, wantNotes)
	}

	// A decode time above the client's whole CPU per call was waiting, not
	// decoding: no note.
	r.Cells[0].ClientCPUUSPerCall = 3450
	for _, n := range analysis.Verdicts(r)[0].Notes {
		if strings.Contains(n, "decoding") {
			t.Errorf("decode note with 5.3 ms of decoding and 3.45 ms of client CPU per call: %q", n)
		}
	}
}

// A suspect cell keeps its figures but gets no verdict: the line says so
// and names it, and no ratio is drawn from it.
func TestSuspectCellNoVerdict(t *testing.T) {
	r := result(
		cell{p: api.REST, s: api.Large, b: 100, c: results.Condition{Concurrency: 8}, p50: 43000, mean: 44000, callsPerS: 26.7, sent: 120, recv: 219650}.build(),
		cell{p: api.GRPC, s: api.Large, b: 100, c: results.Condition{Concurrency: 8}, p50: 1600, mean: 1700, callsPerS: 4700, sent: 65, recv: 99900}.build(),
	)
	r.Cells[0].Suspect = []string{"Little's law does not hold: 26.7 calls/s × 44 ms mean time in flight = 1.17 calls in flight, but 8 workers ran back to back"}
	v := analysis.Verdicts(r)[0]
	if len(v.Versus) != 0 {
		t.Errorf("a verdict drawn from a suspect cell: %+v", v.Versus)
	}
	if !strings.Contains(v.Summary, "no verdict") || !strings.Contains(v.Summary, "REST") {
		t.Errorf("summary %q, want no verdict naming REST", v.Summary)
	}
	if len(v.Notes) == 0 || !strings.Contains(v.Notes[0], "Little's law") {
		t.Errorf("notes %q, want the reason", v.Notes)
	}
}

// Protocols measured at very different server loads are compared with a
// note saying so, in the summary too.
func TestLoadNote(t *testing.T) {
	r := result(
		cell{p: api.REST, s: api.Small, b: 100, p50: 60, mean: 62, callsPerS: 16000, sent: 100, recv: 150, serverCPU: 16}.build(),
		cell{p: api.GRPC, s: api.Small, b: 100, p50: 65, mean: 66, callsPerS: 4000, sent: 60, recv: 80, serverCPU: 52}.build(),
	)
	u1, u2 := 0.6, 0.2
	r.Cells[0].ServerUtilisation, r.Cells[1].ServerUtilisation = &u1, &u2
	v := analysis.Verdicts(r)[0]
	if !strings.Contains(v.Summary, "different loads") {
		t.Errorf("summary %q, want the loads named", v.Summary)
	}
	found := false
	for _, n := range v.Notes {
		found = found || strings.Contains(n, "REST 60% busy") && strings.Contains(n, "gRPC 20% busy")
	}
	if !found {
		t.Errorf("notes %q, want both loads", v.Notes)
	}
	u2 = 0.5
	if v := analysis.Verdicts(r)[0]; strings.Contains(v.Summary, "different loads") {
		t.Errorf("60%% and 50%% busy called different loads: %q", v.Summary)
	}
}

// Conditions make separate verdicts, named in the line when they vary.
func TestConditionsSeparate(t *testing.T) {
	var cs []results.Cell
	for _, n := range []int{1, 8} {
		cond := results.Condition{Concurrency: n}
		cs = append(cs,
			cell{p: api.REST, s: api.Small, b: 100, c: cond, p50: 80, mean: 80, callsPerS: 10000, sent: 100, recv: 150}.build(),
			cell{p: api.GRPC, s: api.Small, b: 100, c: cond, p50: 160, mean: 160, callsPerS: 5000, sent: 60, recv: 50}.build())
	}
	vs := analysis.Verdicts(result(cs...))
	if len(vs) != 2 || vs[0].Condition.Concurrency != 1 || vs[1].Condition.Concurrency != 8 {
		t.Fatalf("%+v", vs)
	}
	if !strings.HasPrefix(vs[1].Summary, "small · concurrency 8: gRPC 2.0x slower than REST (p50)") {
		t.Errorf("summary %q", vs[1].Summary)
	}
}

// Over an emulated link, a protocol whose traffic fills it is named
// bandwidth-bound; one well below it is not.
func TestBandwidthBound(t *testing.T) {
	cond := results.Condition{Concurrency: 8, Link: "100mbit/20ms"}
	r := result(
		cell{p: api.REST, s: api.Large, b: 1, c: cond, p50: 140000, mean: 140000, callsPerS: 56, sent: 130, recv: 219640}.build(),
		cell{p: api.GRPC, s: api.Large, b: 1, c: cond, p50: 64000, mean: 64000, callsPerS: 100, sent: 110, recv: 99970}.build(),
	)
	v := analysis.Verdicts(r)[0]
	want := "REST bandwidth-bound at 56.0 calls/s: 219.6 KB per call on 100 Mbit/s (98% of the link)"
	if !slices.Contains(v.Notes, want) || len(v.Notes) != 1 {
		t.Errorf("notes %q, want only %q (gRPC moves 80%% of the link)", v.Notes, want)
	}
	if !strings.HasSuffix(v.Summary, "; bandwidth-bound: REST") || !strings.HasPrefix(v.Summary, "large · concurrency 8 · link 100 Mbit/s, 20 ms RTT: ") {
		t.Errorf("summary %q", v.Summary)
	}
}

// A ratio that rounds to 1.00 reads "the same", never "1.00x slower".
func TestDescribeRoundsToSame(t *testing.T) {
	for _, v := range []float64{1.003, 0.997} {
		r := results.Ratio{Figure: results.FigLatencyP50, Ratio: v, Significance: results.Untested}
		if got := analysis.Describe(r); got != "the same p50" {
			t.Errorf("Describe(%v) = %q, want the same p50", v, got)
		}
	}
	r := results.Ratio{Figure: results.FigLatencyP50, Ratio: 1.02, Significance: results.Untested}
	if got := analysis.Describe(r); got != "1.02x slower (p50)" {
		t.Errorf("Describe(1.02) = %q", got)
	}
}

// A dimension that applies to some protocols only (the JSON codec: rest):
// the verdict at "JSON by sonic" compares rest with sonic against grpc's
// cells, measured once at the default codec; and the default verdict is
// unchanged.
func TestVerdictBorrowsUnsweptProtocol(t *testing.T) {
	std, sonic := results.Condition{Concurrency: 1}, results.Condition{Concurrency: 1, JSONCodec: "sonic"}
	vs := analysis.Verdicts(result(
		cell{p: api.REST, s: api.Large, b: 100, c: std, p50: 5000, mean: 5000, callsPerS: 200, sent: 100, recv: 220000}.build(),
		cell{p: api.GRPC, s: api.Large, b: 100, c: std, p50: 1000, mean: 1000, callsPerS: 1000, sent: 60, recv: 100000}.build(),
		cell{p: api.REST, s: api.Large, b: 100, c: sonic, p50: 2000, mean: 2000, callsPerS: 500, sent: 100, recv: 220000}.build(),
	))
	if len(vs) != 2 {
		t.Fatalf("%d verdicts, want 2: %+v", len(vs), vs)
	}
	if want := "large · concurrency 1 · JSON by sonic: gRPC 2.0x faster than REST (p50)"; !strings.HasPrefix(vs[1].Summary, want) {
		t.Errorf("sonic verdict %q, want it to start %q", vs[1].Summary, want)
	}
	if want := "large · concurrency 1: gRPC 5.0x faster than REST (p50)"; !strings.HasPrefix(vs[0].Summary, want) {
		t.Errorf("std verdict %q, want it to start %q", vs[0].Summary, want)
	}
}
