package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/meteorbench/meteorbench/internal/loadgen/loadgentest"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// Bad capacity flags exit 2 with one line, before anything is measured.
func TestCapacityBadFlags(t *testing.T) {
	wantUsageErrors(t, []string{"capacity", "--target", "127.0.0.1:1"}, [][]string{
		{"--slo", "p99"},
		{"--json-codec", "simdjson"},
		{"--slo", "p42=1ms"},
		{"--slo", "p99=0s"},
		{"--slo", "p99=fast"},
		{"--slo", "99=50ms"},
		{"--max-errors", "200%"},
		{"--max-errors", "-1%"},
		{"--max-errors", "lots"},
		{"--precision", "0%"},
		{"--rate", "5"},
		{"--repeat", "0"},
		{"--duration", "5s"},
		{"--iterations", "10"},
		{"--batch", "10"},
		{"--max-time", "-1s"},
		{"--probe", "0s"},
		{"--probe-warmup", "-1s"},
		{"--pause", "-1s"},
		{"--start", "0"},
		{"--concurrency", "4,8"},
		{"--proto", "soap"},
		{"--scenario", "huge"},
		{"--format", "xml"},
		{"extra-argument"},
	})
}

// A tiny search against the real server (in-process, 127.0.0.1): the JSON
// document has a capacity entry per protocol with every probe kept, no
// cells, and report renders it.
func TestCapacityCommand(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	prefix := filepath.Join(t.TempDir(), "cap")
	_, stderr, err := execute(t, "capacity", "--target", addr, "--proto", "rest,grpc", "--scenario", "small",
		"--slo", "p99=50ms", "--probe", "200ms", "--probe-warmup", "50ms", "--pause", "10ms", "--start", "50",
		"--max-time", "3s", "--format", "json,table", "--out", prefix)
	if err != nil {
		t.Fatalf("capacity: %v\n%s", err, stderr)
	}
	res, err := results.ReadFile(prefix + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 0 || len(res.Capacity) != 2 || res.Stop.Reason != results.StopCompleted {
		t.Fatalf("%d cells, %d capacity series, stopped %q", len(res.Cells), len(res.Capacity), res.Stop)
	}
	for i, proto := range []string{"rest", "grpc"} {
		c := res.Capacity[i]
		if string(c.Protocol) != proto || c.Objective != "p99<=50ms" || c.BoundUS != 50000 || c.MaxErrors != 0.001 {
			t.Errorf("series %d: %s %s %v %v", i, c.Protocol, c.Objective, c.BoundUS, c.MaxErrors)
		}
		if len(c.Probes) == 0 {
			t.Fatalf("%s: no probe kept", proto)
		}
		for _, p := range c.Probes {
			if p.Offered <= 0 || p.Verdict == "" || p.Phase == "" || p.DurationS <= 0 {
				t.Errorf("%s: probe %+v", proto, p)
			}
		}
		if c.Probes[0].Offered != 50 || c.Probes[0].Phase != "grow" {
			t.Errorf("%s: first probe %+v, want grow at --start 50", proto, c.Probes[0])
		}
	}
	if len(res.Verdicts) != 1 || !strings.HasPrefix(res.Verdicts[0].Summary, "small · lean engine, p99<=50ms: REST ") {
		t.Errorf("verdicts %+v", res.Verdicts)
	}
	table, err := os.ReadFile(prefix + ".txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(table), "== capacity · small (GetVersion) · p99<=50ms") || strings.Contains(string(table), "no cells were measured") {
		t.Errorf("table:\n%s", table)
	}
	// report reads it back.
	out, _, err := execute(t, "report", prefix+".json", "--format", "csv")
	if err != nil || !strings.HasPrefix(out, "scenario,protocol,concurrency,") {
		t.Errorf("report --format csv: %v\n%s", err, out)
	}
}

// A target that stops answering for good after a few calls (as a server
// stopped with SIGSTOP): every repeat of the first probe stalls, the
// series fails, the document says so and the command exits non-zero,
// claiming no rate.
func TestCapacityStalledTargetFails(t *testing.T) {
	var stopped atomic.Bool
	srv := loadgentest.Start(t, loadgentest.Config{Hook: func(ctx context.Context, n int64) {
		if n >= 25 {
			stopped.Store(true)
		}
		if stopped.Load() {
			<-ctx.Done()
		}
	}})
	prefix := filepath.Join(t.TempDir(), "cap")
	_, stderr, err := execute(t, "capacity", "--target", srv.Addr, "--proto", "rest", "--scenario", "small",
		"--timeout", "1s", "--probe", "300ms", "--probe-warmup", "100ms", "--pause", "50ms", "--start", "100",
		"--max-time", "20s", "--format", "json", "--out", prefix)
	if code := exitCodeQuiet(err); code != 1 || !strings.Contains(err.Error(), "capacity small REST · lean engine: failed: the target stalled in 3 probes in a row at 100 calls/s") {
		t.Fatalf("exit status %d (%v), want 1 naming the stall\n%s", code, err, stderr)
	}
	res, rerr := results.ReadFile(prefix + ".json")
	if rerr != nil {
		t.Fatal(rerr)
	}
	c := res.Capacity[0]
	if c.Rate != 0 || c.Failure == "" || len(c.Probes) != 3 {
		t.Fatalf("rate %v, failure %q, %d probes", c.Rate, c.Failure, len(c.Probes))
	}
	for _, p := range c.Probes {
		if p.Verdict != "void" || !strings.HasPrefix(p.Why, "the target stalled: ") {
			t.Errorf("probe %+v", p)
		}
	}
	if len(res.Verdicts) != 1 || !strings.Contains(res.Verdicts[0].Summary, "REST failed: the target stalled") {
		t.Errorf("verdicts %+v", res.Verdicts)
	}
}

// capacity --repeat 3 end to end against the real server (in-process,
// 127.0.0.1), tiny probes, bounded time: every series has three searches,
// each with its probes, and a median found rate within their range; the
// verdict compares medians; the summary names no flag capacity refuses.
func TestCapacityRepeat(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	prefix := filepath.Join(t.TempDir(), "cap")
	_, stderr, err := execute(t, "capacity", "--target", addr, "--proto", "rest,grpc", "--scenario", "small",
		"--slo", "p99=100ms", "--probe", "200ms", "--confirm-probe", "200ms", "--probe-warmup", "50ms", "--pause", "10ms",
		"--start", "50", "--repeat", "3", "--max-time", "9s", "--format", "json,table", "--out", prefix)
	if err != nil {
		t.Fatalf("capacity --repeat 3: %v\n%s", err, stderr)
	}
	for i := 1; i <= 3; i++ {
		if !strings.Contains(stderr, "capacity search "+strconv.Itoa(i)+" of 3") {
			t.Errorf("progress lacks search %d of 3:\n%s", i, stderr)
		}
	}
	res, err := results.ReadFile(prefix + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Capacity) != 2 || res.Settings.Repeat != 3 {
		t.Fatalf("%d series, settings.repeat %d", len(res.Capacity), res.Settings.Repeat)
	}
	for _, c := range res.Capacity {
		if len(c.Searches) != 3 || len(c.Probes) != 0 {
			t.Fatalf("%s: %d searches, %d probes outside them", c.Protocol, len(c.Searches), len(c.Probes))
		}
		var rates []float64
		for j, s := range c.Searches {
			t.Logf("%s search %d: %v [%v, %v] in %d probes, complete %v: %s", c.Protocol, j+1, s.Rate, s.Lo, s.Hi, len(s.Probes), s.Complete, s.Note)
			if len(s.Probes) == 0 || s.Probes[0].Offered != 50 {
				t.Errorf("%s search %d: %d probes, the first not at --start 50", c.Protocol, j+1, len(s.Probes))
			}
			rates = append(rates, s.Rate)
		}
		slices.Sort(rates)
		if c.Rate != rates[1] || c.RateMin != rates[0] || c.RateMax != rates[2] || c.Rate <= 0 {
			t.Errorf("%s: median %v [%v, %v], searches found %v", c.Protocol, c.Rate, c.RateMin, c.RateMax, rates)
		}
	}
	if len(res.Verdicts) != 1 || !strings.Contains(res.Verdicts[0].Summary, "median of 3 searches [") {
		t.Errorf("verdicts %+v", res.Verdicts)
	}
	table, err := os.ReadFile(prefix + ".txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(table), "(median)") || !strings.Contains(string(table), "search 3 of 3") || strings.Contains(string(table)+stderr, "--repeat 5") {
		t.Errorf("table:\n%s", table)
	}
}
