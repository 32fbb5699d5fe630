package session

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Per-worker tallies merged after a phase give what one tally of all the
// calls would have given.
func TestTallyMergeEqualsOneTally(t *testing.T) {
	base := time.Now()
	rec := func(i int) record {
		start := base.Add(time.Duration(i) * time.Millisecond)
		r := record{intended: start.Add(-time.Duration(i%7) * time.Microsecond), start: start, end: start.Add(time.Duration(50+i*i%997) * time.Microsecond)}
		switch {
		case i%13 == 0:
			r.err, r.class = errors.New("x"), "http-503"
		case i%29 == 0:
			r.err, r.class = errors.New("x"), classCancelled
		case i%5 == 0:
			r.out.FirstRecord = time.Duration(i) * time.Microsecond
		}
		return r
	}
	all := newTally(true)
	parts := []*tally{newTally(true), newTally(true), newTally(true)}
	for i := 1; i <= 1000; i++ {
		r := rec(i)
		all.add(&r)
		parts[i%3].add(&r)
		if i%10 == 0 {
			all.batch.Add(float64(i))
			parts[i%3].batch.Add(float64(i))
		}
	}
	merged := parts[0]
	for _, p := range parts[1:] {
		merged.merge(p)
	}
	if merged.calls != all.calls || merged.errors != all.errors || merged.cancelled != all.cancelled || merged.classes["http-503"] != all.classes["http-503"] {
		t.Errorf("counts: merged %d/%d/%d, one tally %d/%d/%d", merged.calls, merged.errors, merged.cancelled, all.calls, all.errors, all.cancelled)
	}
	if all.calls+all.errors+all.cancelled != 1000 || all.errors == 0 || all.cancelled == 0 {
		t.Fatalf("test records: %d calls %d errors %d cancelled", all.calls, all.errors, all.cancelled)
	}
	if !merged.h[results.KindLatency].Equals(all.h[results.KindLatency]) || !merged.h[results.KindUncorrected].Equals(all.h[results.KindUncorrected]) || !merged.h[results.KindFirstRecord].Equals(all.h[results.KindFirstRecord]) {
		t.Error("merged histograms differ from one histogram of all the calls")
	}
	if math.Abs(merged.sum[results.KindLatency]-all.sum[results.KindLatency]) > 1 || merged.busy != all.busy {
		t.Errorf("sums: %v vs %v, busy %v vs %v", merged.sum[results.KindLatency], all.sum[results.KindLatency], merged.busy, all.busy)
	}
	if merged.batch.N != all.batch.N || math.Abs(merged.batch.Mean-all.batch.Mean) > 1e-9 || math.Abs(merged.batch.Stddev()-all.batch.Stddev()) > 1e-9 {
		t.Errorf("batch spread: merged %+v (sd %v), one %+v (sd %v)", merged.batch, merged.batch.Stddev(), all.batch, all.batch.Stddev())
	}
	if got := latency(all.h[results.KindLatency], all.sum[results.KindLatency]); got.Max < got.P999 || got.Mean <= 0 {
		t.Errorf("latency %+v", got)
	}
}

func TestDistributionGrid(t *testing.T) {
	qs := distributionQuantiles
	if qs[0] != 0 || qs[len(qs)-1] != 1 {
		t.Errorf("grid %v does not span 0..1", qs)
	}
	for i := 1; i < len(qs); i++ {
		if qs[i] <= qs[i-1] {
			t.Fatalf("grid not increasing at %d: %v", i, qs)
		}
	}
	h := newHist()
	for i := int64(1); i <= 100000; i++ {
		recordDuration(h, time.Duration(i)*time.Microsecond)
	}
	d := distribution(h)
	for i := 1; i < len(d); i++ {
		if d[i].US < d[i-1].US {
			t.Fatalf("distribution decreases at %v", d[i])
		}
	}
	if last := d[len(d)-1].US; math.Abs(last-100000) > 100 {
		t.Errorf("distribution ends at %v µs, want the 100000 µs max", last)
	}
	recordDuration(h, 2*time.Hour) // clamped, not dropped
	if h.TotalCount() != 100001 {
		t.Errorf("a value above the range was dropped")
	}
}

func TestClassify(t *testing.T) {
	expired, cancel := context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	bg := context.Background()
	for _, tc := range []struct {
		ctx  context.Context
		err  error
		want results.ErrorClass
	}{
		{bg, call.Invalid("bad"), results.ClassInvalid},
		{bg, call.HTTPStatus(503, ""), "http-503"},
		{bg, call.GRPCCode("Unavailable", errors.New("x")), "grpc-Unavailable"},
		{bg, errors.New("connection refused"), results.ClassTransport},
		{bg, context.DeadlineExceeded, results.ClassTimeout},
		{expired, call.Invalid("truncated because the deadline hit"), results.ClassTimeout},
		{cancelled, errors.New("anything"), results.ClassCancelled},
	} {
		if got := call.Classify(tc.ctx, tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestParseMetrics(t *testing.T) {
	const text = `# HELP meteorbench_cpu_seconds_total CPU.
# TYPE meteorbench_cpu_seconds_total counter
meteorbench_cpu_seconds_total 12.345678
meteorbench_requests_total{method="GetVersion",protocol="grpc"} 42
meteorbench_requests_total{method="PostLargePayload",protocol="rest-protobuf"} 7 1712345678000
meteorbench_build_info{go_version="go1.26",version="a\"b,c}"} 1
go_gc_duration_seconds{quantile="0.5"} 1.5e-05
`
	s, err := ParseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if s.CPU != 12345678*time.Microsecond {
		t.Errorf("cpu %v", s.CPU)
	}
	if s.Requests["grpc/GetVersion"] != 42 || s.Requests["rest-protobuf/PostLargePayload"] != 7 {
		t.Errorf("requests %v", s.Requests)
	}
	if _, err := ParseMetrics(strings.NewReader("go_goroutines 5\n")); err == nil {
		t.Error("metrics without the CPU counter accepted")
	}
	if _, err := ParseMetrics(strings.NewReader("meteorbench_cpu_seconds_total abc\n")); err == nil {
		t.Error("a malformed sample accepted")
	}
}

// nopCaller answers at once: what is left is the harness's own cost.
type nopCaller struct{}

func (nopCaller) Call(context.Context) (call.Outcome, error) { return call.Outcome{}, nil }

// BenchmarkHarnessPerCall is the load generator's own cost per call: the
// per-call deadline, two clock reads, the deferred record and the
// histogram and counter updates.
func BenchmarkHarnessPerCall(b *testing.B) {
	for _, mode := range []string{"closed", "open"} {
		b.Run(mode, func(b *testing.B) {
			w := &worker{caller: nopCaller{}, s: newShards(1, mode == "open")[0], p: &phase{batch: 1, timeout: time.Minute}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				now := time.Now()
				w.one(ctx, now, now, record{})
			}
			if w.s.t.calls == 0 {
				b.Fatal("nothing recorded")
			}
		})
	}
}

// BenchmarkClosedLoop is a whole phase's cost per call, with a no-op call:
// the ceiling the harness puts on calls/s per core.
func BenchmarkClosedLoop(b *testing.B) {
	b.ReportAllocs()
	cs := singleCallers(nopCaller{})
	res := runPhase(context.Background(), cs, b.N, time.Minute, schedule{}, bounds{soft: time.Hour, hard: time.Hour, iterations: 1})
	if res.t.calls != int64(b.N) {
		b.Fatalf("%d calls, want %d", res.t.calls, b.N)
	}
	b.ReportMetric(float64(b.N)/res.elapsed.Seconds(), "calls/s")
}

// A repeat too short to complete one batch has no time per batch: the
// merged cell and its interval come from the repeats that have one, never
// from a 0 standing in for "none".
func TestMergeCellIgnoresRepeatsWithoutBatches(t *testing.T) {
	cell := func(batches int64, batchMS float64) results.Cell {
		return results.Cell{
			CellKey: results.CellKey{Protocol: "rest", Scenario: "large", Batch: 100, Condition: results.Condition{Concurrency: 1}},
			Calls:   150, CallsPerS: 100, Batches: batches, BatchMS: results.Spread{Mean: batchMS},
		}
	}
	m := mergeCell([]results.Cell{cell(1, 900), cell(0, 0), cell(1, 1100), cell(1, 1000)})
	if m.BatchMS.Mean != 1000 {
		t.Errorf("merged time per batch = %v, want 1000 (the median of the three real ones)", m.BatchMS.Mean)
	}
	iv, ok := m.CI["batch_ms_mean"]
	if !ok || iv.N != 3 || iv.Lo != 900 || iv.Hi != 1100 {
		t.Errorf("batch_ms_mean interval = %+v (present %v), want n=3 over [900, 1100]", iv, ok)
	}
	if _, has := m.Repeats[1]["batch_ms_mean"]; has {
		t.Error("the repeat without a batch reports a time per batch")
	}
	if m.Batches != 3 || m.Calls != 600 {
		t.Errorf("totals: %d batches, %d calls; want 3, 600", m.Batches, m.Calls)
	}
}
