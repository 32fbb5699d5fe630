package engine

import (
	"context"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// nopCaller answers at once: what is left is the harness's own cost.
type nopCaller struct{}

func (nopCaller) Call(context.Context) (call.Outcome, error) { return call.Outcome{}, nil }

// BenchmarkHarnessPerCall is the load generator's own cost per call: the
// per-call deadline, two clock reads, the deferred record and the
// histogram and counter updates.
func BenchmarkHarnessPerCall(b *testing.B) {
	for _, mode := range []string{"closed", "open"} {
		b.Run(mode, func(b *testing.B) {
			w := &worker{caller: nopCaller{}, s: newShards(1, mode == "open")[0], p: &phase{Batch: 1, timeout: time.Minute}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				now := time.Now()
				w.one(ctx, now, now, record{})
			}
			if w.s.Tally.Calls == 0 {
				b.Fatal("nothing recorded")
			}
		})
	}
}

// BenchmarkClosedLoop is a whole phase's cost per call, with a no-op call:
// the ceiling the harness puts on calls/s per core.
func BenchmarkClosedLoop(b *testing.B) {
	b.ReportAllocs()
	cs := SingleCallers(nopCaller{})
	res := runPhase(context.Background(), cs, b.N, time.Minute, Schedule{}, Bounds{Soft: time.Hour, Hard: time.Hour, Iterations: 1})
	if res.Tally.Calls != int64(b.N) {
		b.Fatalf("%d calls, want %d", res.Tally.Calls, b.N)
	}
	b.ReportMetric(float64(b.N)/res.Elapsed.Seconds(), "calls/s")
}
