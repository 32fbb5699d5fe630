package loadgen_test

import (
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

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
