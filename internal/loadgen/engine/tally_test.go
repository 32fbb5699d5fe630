package engine

import (
	"context"
	"errors"
	"math"
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
	all := NewTally(true)
	parts := []*Tally{NewTally(true), NewTally(true), NewTally(true)}
	for i := 1; i <= 1000; i++ {
		r := rec(i)
		all.add(&r)
		parts[i%3].add(&r)
		if i%10 == 0 {
			all.Batch.Add(float64(i))
			parts[i%3].Batch.Add(float64(i))
		}
	}
	merged := parts[0]
	for _, p := range parts[1:] {
		merged.merge(p)
	}
	if merged.Calls != all.Calls || merged.Errors != all.Errors || merged.Cancelled != all.Cancelled || merged.Classes["http-503"] != all.Classes["http-503"] {
		t.Errorf("counts: merged %d/%d/%d, one tally %d/%d/%d", merged.Calls, merged.Errors, merged.Cancelled, all.Calls, all.Errors, all.Cancelled)
	}
	if all.Calls+all.Errors+all.Cancelled != 1000 || all.Errors == 0 || all.Cancelled == 0 {
		t.Fatalf("test records: %d calls %d errors %d cancelled", all.Calls, all.Errors, all.Cancelled)
	}
	if !merged.H[results.KindLatency].Equals(all.H[results.KindLatency]) || !merged.H[results.KindUncorrected].Equals(all.H[results.KindUncorrected]) || !merged.H[results.KindFirstRecord].Equals(all.H[results.KindFirstRecord]) {
		t.Error("merged histograms differ from one histogram of all the calls")
	}
	if math.Abs(merged.Sum[results.KindLatency]-all.Sum[results.KindLatency]) > 1 || merged.Busy != all.Busy {
		t.Errorf("sums: %v vs %v, busy %v vs %v", merged.Sum[results.KindLatency], all.Sum[results.KindLatency], merged.Busy, all.Busy)
	}
	if merged.Batch.N != all.Batch.N || math.Abs(merged.Batch.Mean-all.Batch.Mean) > 1e-9 || math.Abs(merged.Batch.Stddev()-all.Batch.Stddev()) > 1e-9 {
		t.Errorf("batch spread: merged %+v (sd %v), one %+v (sd %v)", merged.Batch, merged.Batch.Stddev(), all.Batch, all.Batch.Stddev())
	}
	if got := Latency(all.H[results.KindLatency], all.Sum[results.KindLatency]); got.Max < got.P999 || got.Mean <= 0 {
		t.Errorf("latency %+v", got)
	}
}

func TestDistributionGrid(t *testing.T) {
	qs := DistributionQuantiles
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
	d := Distribution(h)
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
