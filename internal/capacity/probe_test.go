package capacity

import (
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/results"
)

// cell is a 2 s open-loop probe at 1,000 calls/s whose server answered in
// 2 ms (from the send): latency from the intended start is added by the
// generator's lateness.
func cell(corrP99 float64) *results.Cell {
	return &results.Cell{
		Calls: 2000, DurationS: 2, RateAchieved: 1000,
		LatencyUS:            results.Latency{P50: 2000, P99: corrP99, Mean: 3000},
		LatencyUncorrectedUS: &results.Latency{P50: 1500, P99: 2000, Mean: 1600},
		ClientCPUUSPerCall:   50,
	}
}

// A starved generator (it woke late: CPU taken by other goroutines, or the
// machine's steal) voids a failing probe, for each reason the generator
// can have, and never a passing one or one the server's latency fails.
func TestVoid(t *testing.T) {
	obj := Objective{Percentile: 99, Bound: 50 * time.Millisecond, MaxErrors: 0.001}
	judge := func(c *results.Cell) (bool, string) { return void(c, 64, obj) }

	woke := cell(80000)
	woke.LateCalls, woke.GeneratorLateCalls = 300, 290
	if v, why := judge(woke); !v || !strings.Contains(why, "290 of 2000 calls started late with a worker free: the load generator woke late") {
		t.Errorf("woke late: %v %q", v, why)
	}
	// Short of CPU (the cell says so): void even where the latency from
	// the send is over the bound, as on a shared machine the generator
	// reads the answers late too.
	cpu := cell(80000)
	cpu.LatencyUncorrectedUS.P99 = 60000
	cpu.GeneratorBottleneck, cpu.GeneratorBottleneckReason = true, "the machine's 2 cores were saturated and the load generator used more CPU than the server (1.27 vs 0.64 cores)"
	if v, why := judge(cpu); !v || why != cpu.GeneratorBottleneckReason {
		t.Errorf("cpu: %v %q", v, why)
	}
	// The same with the server's own cores saturated: the failure is the
	// server's, as it had no CPU to spare.
	full := cell(80000)
	full.GeneratorBottleneck, full.GeneratorBottleneckReason = true, "the load generator used 0.9 of its 1 cores"
	u := 0.93
	full.ServerUtilisation = &u
	full.LateCalls, full.GeneratorLateCalls = 300, 290
	if v, why := judge(full); v {
		t.Errorf("server saturated, voided: %q", why)
	}
	u = 0.85
	if v, why := judge(full); !v || why != full.GeneratorBottleneckReason {
		t.Errorf("server at 85%%, generator short of CPU: %v %q", v, why)
	}
	busy := cell(80000)
	busy.LatencyUncorrectedUS.Mean = 64000 // 1,000/s x 64 ms = 64 calls in flight: every worker
	busy.LatencyUncorrectedUS.P99 = 49000
	busy.LateCalls, busy.GeneratorLateCalls = 900, 850 // the dispatcher waited for a worker
	if v, why := judge(busy); !v || !strings.Contains(why, "all 64 workers were busy while the server met the objective") {
		t.Errorf("busy: %v %q", v, why)
	}
	// The server's own latency over the bound: its failure, whatever the
	// generator did.
	slow := cell(80000)
	slow.LatencyUncorrectedUS.P99 = 60000
	slow.LateCalls, slow.GeneratorLateCalls = 300, 290
	if v, why := judge(slow); v {
		t.Errorf("server too slow, voided: %q", why)
	}
	// Errors over the budget are the server's.
	errs := cell(80000)
	errs.Errors, errs.LateCalls, errs.GeneratorLateCalls = 100, 300, 290
	if v, why := judge(errs); v {
		t.Errorf("errors, voided: %q", why)
	}
	// A few late calls are jitter, not a starved generator.
	few := cell(80000)
	few.LateCalls, few.GeneratorLateCalls = 5, 5
	if v, why := judge(few); v {
		t.Errorf("5 late calls voided: %q", why)
	}
}

// A cell says the target stalled when calls were abandoned at its hard end
// (counted in the abandoned class, or only warned about by an older load
// generator), when calls timed out, or when it is suspect; never otherwise.
func TestStalled(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*results.Cell)
		want string
	}{
		{"clean", func(*results.Cell) {}, ""},
		{"errors of another class", func(c *results.Cell) {
			c.Errors, c.ErrorClasses = 3, results.ErrorCounts{"http-503": 3}
		}, ""},
		{"abandoned", func(c *results.Cell) {
			c.Errors, c.ErrorClasses = 8, results.ErrorCounts{results.ClassAbandoned: 8}
		}, "8 calls still running at the probe's hard end (abandoned)"},
		{"timeout", func(c *results.Cell) {
			c.Errors, c.ErrorClasses = 1, results.ErrorCounts{"timeout": 1}
		}, "1 call timed out (--timeout 10s)"},
		{"suspect", func(c *results.Cell) {
			c.Suspect = []string{"Little's law: 8 workers at 43 ms make 185 calls/s, not 26.7"}
		}, "the cell is suspect: Little's law: 8 workers at 43 ms make 185 calls/s, not 26.7"},
	} {
		c := cell(2000)
		tc.edit(c)
		got, why := stalled(c, 10*time.Second)
		if got != (tc.want != "") || why != tc.want {
			t.Errorf("%s: stalled %v %q, want %q", tc.name, got, why, tc.want)
		}
	}
}

// Several searches of a series: the median found rate, the range, the
// brackets spanned, each search kept; a failed search fails the series.
func TestPlanCapacityRepeated(t *testing.T) {
	p := &Plan{Objective: Objective{Percentile: 99, Bound: 50 * time.Millisecond}}
	key := results.CellKey{Scenario: "small", Protocol: "rest"}
	rs := []Result{
		{Rate: 950, Lo: 950, Hi: 990, Held: 3, Boundary: 3, Complete: true},
		{Rate: 900, Lo: 900, Hi: 940, Held: 3, Boundary: 3, Complete: true},
		{Rate: 1010, Lo: 1010, Hi: 1050, Held: 2, Boundary: 3, Complete: true, Note: "held in 2 of 3 boundary probes"},
	}
	c := p.Capacity(key, rs, 3)
	if c.Rate != 950 || c.RateMin != 900 || c.RateMax != 1010 || c.Lo != 900 || c.Hi != 1050 || c.Held != 8 || c.Boundary != 9 || !c.Complete {
		t.Errorf("series %+v", c.CapacitySearch)
	}
	if len(c.Searches) != 3 || c.Searches[1].Rate != 900 || c.Workers != AutoWorkers(950, p.Objective.Bound) || c.Repeated() != 3 {
		t.Errorf("%d searches, workers %d", len(c.Searches), c.Workers)
	}
	if c.Note != "search 3 of 3: held in 2 of 3 boundary probes" {
		t.Errorf("note %q", c.Note)
	}
	// Even: the mean of the middle two.
	if c := p.Capacity(key, rs[:2], 2); c.Rate != 925 {
		t.Errorf("median of two %v", c.Rate)
	}
	// Failed in search 2 (not searched again): no rate.
	failed := []Result{rs[0], {Lo: 400, Failure: "failed: the target stalled in 3 probes in a row at 800 calls/s (last: x)"}}
	c = p.Capacity(key, failed, 3)
	if c.Rate != 0 || c.Complete || c.Failure != "failed in search 2 of 3: the target stalled in 3 probes in a row at 800 calls/s (last: x)" || len(c.Searches) != 2 {
		t.Errorf("failed series %+v", c.CapacitySearch)
	}
	// One search: the search's own result, no searches array.
	if c := p.Capacity(key, rs[:1], 1); c.Rate != 950 || c.Hi != 990 || c.Searches != nil || c.RateMin != 0 {
		t.Errorf("one search %+v", c)
	}
}

// serverCPU reads a cell's server CPU per call and the server's CPUs
// (from its utilisation); unknown without the server's metrics.
func TestServerCPU(t *testing.T) {
	per, u := 500.0, 0.25 // 1,000 calls/s × 500 µs = 0.5 cores: a quarter of 2
	c := &results.Cell{Calls: 2000, DurationS: 2, ServerCPUUSPerCall: &per, ServerUtilisation: &u}
	if gotPer, cores := serverCPU(c); gotPer != 500 || cores != 2 {
		t.Errorf("serverCPU = %v µs, %v cores; want 500, 2", gotPer, cores)
	}
	if gotPer, cores := serverCPU(&results.Cell{Calls: 2000, DurationS: 2}); gotPer != 0 || cores != 0 {
		t.Errorf("no metrics: %v, %v", gotPer, cores)
	}
}
