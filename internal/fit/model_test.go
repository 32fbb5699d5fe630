package fit

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
)

func pt(v float64) Value { return Value{v, v, v} }

func plan(t *testing.T, tier, traffic string) Plan {
	t.Helper()
	ti, err := ParseTier(tier)
	if err != nil {
		t.Fatal(err)
	}
	m, err := results.ParseMix(traffic)
	if err != nil {
		t.Fatal(err)
	}
	return Plan{Tier: ti, Traffic: m, Headroom: 0.7}
}

// The example: REST over CPU, gRPC within it, CPU binding both.
func TestEstimateAndVerdict(t *testing.T) {
	p := plan(t, "1cpu/100mbit", "small=800,large=20,post=5")
	rest := Estimate(p, Costs{Protocol: api.REST, Cores: Value{0.93, 0.9, 0.97}, Sent: pt(2), Received: pt(41)})
	grpc := Estimate(p, Costs{Protocol: api.GRPC, Cores: pt(0.38), Sent: pt(1), Received: pt(19)})
	if rest.Fits || !grpc.Fits || rest.Binding != results.ResourceCPU || grpc.Binding != results.ResourceCPU {
		t.Fatalf("rest %+v\ngrpc %+v", rest, grpc)
	}
	if math.Abs(grpc.MaxScale-1/0.38) > 1e-9 || math.Abs(rest.Utilisation[results.ResourceLinkReceived]-0.41) > 1e-9 {
		t.Fatalf("max scale %v, link %v", grpc.MaxScale, rest.Utilisation)
	}
	got := Verdict(p, []results.Fit{rest, grpc})
	for _, want := range []string{
		"REST needs 0.93 [0.90, 0.97] of 1 CPU (93%, over the 70% you allow), 41.0 Mbit/s of answers (41%)",
		"it does not fit (within the headroom up to 0.75x this traffic)",
		"gRPC needs 0.38 of 1 CPU (38%)", "it fits, with room for 1.84x this traffic", "CPU binds both.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("verdict lacks %q:\n%s", want, got)
		}
	}
}

// A link-bound traffic: the answers bind; the smallest tier of a list
// that fits is named, memory counts against a tier that gives it, and
// --same-host adds the callers' CPU.
func TestEstimateLinkMemoryTiersSameHost(t *testing.T) {
	p := plan(t, "1cpu/512mb/100mbit", "large=40")
	p.Tiers, _ = ParseTiers("1cpu/50mbit,1cpu/100mbit,2cpu/1gbit")
	mem := 300.0
	c := Costs{Protocol: api.REST, Cores: pt(0.1), ClientCores: pt(0.3), Sent: pt(0.1), Received: pt(80), MemoryMiB: &mem}
	f := Estimate(p, c)
	if f.Binding != results.ResourceLinkReceived || math.Abs(f.MaxScale-100.0/80) > 1e-9 || f.Fits {
		t.Fatalf("%+v", f)
	}
	if f.SmallestTier != "2cpu/1gbit" {
		t.Fatalf("smallest tier %q", f.SmallestTier)
	}
	if u := f.Utilisation[results.ResourceMemory]; math.Abs(u-300.0/512) > 1e-9 {
		t.Fatalf("memory %v", u)
	}
	p.SameHost = true
	if f := Estimate(p, c); math.Abs(f.CPUCores-0.4) > 1e-9 {
		t.Fatalf("same host: %v cores", f.CPUCores)
	}
	// Memory binds when it is the highest, but the scale is the rate's.
	p.Tier.MemoryMiB = 200
	if f := Estimate(p, c); f.Binding != results.ResourceMemory || math.Abs(f.MaxScale-100.0/80) > 1e-9 {
		t.Fatalf("memory binding: %+v", f)
	}
}

// The probes' reading: the first saturated probe's throughput, or
// generator-bound, or no saturation at all.
func TestJudge(t *testing.T) {
	pred := 2.0
	for name, tc := range map[string]struct {
		probes   []results.FitProbe
		measured float64 // 0: none
		gen      bool
	}{
		"saturated at 1.2":    {probes: []results.FitProbe{{Scale: 1.6, Achieved: 160}, {Scale: 2, Achieved: 198}, {Scale: 2.4, Achieved: 190, Saturated: true}}, measured: 1.9},
		"saturated at 1":      {probes: []results.FitProbe{{Scale: 1.6, Achieved: 160}, {Scale: 2, Achieved: 150, Saturated: true}, {Scale: 2.4, Achieved: 152, Saturated: true}}, measured: 1.5},
		"generator":           {probes: []results.FitProbe{{Scale: 1.6, Achieved: 160}, {Scale: 2, Achieved: 150, Saturated: true, GeneratorBound: "busy"}}, gen: true},
		"void then held":      {probes: []results.FitProbe{{Scale: 1.6, Achieved: 120, Saturated: true, Utilisation: map[string]float64{"cpu": 0.5}}, {Scale: 2, Achieved: 199}, {Scale: 2.4, Achieved: 196, Saturated: true, Utilisation: map[string]float64{"cpu": 0.97}}}, measured: 1.96},
		"void then delivered": {probes: []results.FitProbe{{Scale: 1.6, Achieved: 120, Saturated: true, Utilisation: map[string]float64{"cpu": 0.5}}, {Scale: 2, Achieved: 200}, {Scale: 2.4, Achieved: 240}}},
		"idle tier":           {probes: []results.FitProbe{{Scale: 1.6, Achieved: 120, Saturated: true, Utilisation: map[string]float64{"cpu": 0.5}}}, gen: true},
		"never":               {probes: []results.FitProbe{{Scale: 1.6, Achieved: 160}, {Scale: 2.4, Achieved: 240}}},
	} {
		f := &results.Fit{Protocol: api.GRPC, FitVerify: results.FitVerify{PredictedMax: &pred, Probes: tc.probes}, MaxScale: pred}
		judge(f, 100)
		switch {
		case tc.gen != (f.GeneratorBound != ""):
			t.Errorf("%s: generator-bound %q", name, f.GeneratorBound)
		case tc.measured == 0 && f.MeasuredMax != nil:
			t.Errorf("%s: measured %v, want none", name, *f.MeasuredMax)
		case tc.measured > 0 && (f.MeasuredMax == nil || math.Abs(*f.MeasuredMax-tc.measured) > 1e-9):
			t.Errorf("%s: measured %v, want %v", name, f.MeasuredMax, tc.measured)
		}
		s := Sentence(Plan{Tier: Tier{CPUs: 1}, Headroom: 0.7}, f)
		switch name {
		case "saturated at 1":
			if !strings.Contains(s, "no verdict") { // 2 predicted against 1.5: 33% off
				t.Errorf("%s: %s", name, s)
			}
		case "generator":
			if !strings.Contains(s, "the load generator was the bottleneck") {
				t.Errorf("%s: %s", name, s)
			}
		case "saturated at 1.2":
			if !strings.Contains(s, "verified: saturation measured at 1.90x, predicted 2.0x") {
				t.Errorf("%s: %s", name, s)
			}
		}
	}
}

func TestFromCells(t *testing.T) {
	traffic, _ := results.ParseMix("small=100,large=10")
	cpu := func(v float64) *float64 { return &v }
	cell := func(sc api.Scenario, pr api.Protocol, cpuUS, sent, recv float64) results.Cell {
		return results.Cell{CellKey: results.CellKey{Scenario: sc, Protocol: pr}, Calls: 10, ServerCPUUSPerCall: cpu(cpuUS), BytesPerCall: results.Bytes{Sent: sent, Received: recv}}
	}
	cells := []results.Cell{cell(api.Small, api.REST, 50, 100, 200), cell(api.Large, api.REST, 2000, 100, 200000)}
	costs, notes, err := FromCells(cells, traffic)
	if err != nil || len(costs) != 1 || len(notes) != 1 {
		t.Fatal(costs, notes, err)
	}
	if c := costs[0]; math.Abs(c.Cores.V-(100*50e-6+10*2000e-6)) > 1e-12 || math.Abs(c.Received.V-(100*200+10*200000)*8/1e6) > 1e-9 {
		t.Fatalf("%+v", c)
	}
	// A mix cell of the traffic scaled wins over the scenario cells.
	mixed := cell(results.MixScenario, api.REST, 300, 100, 20000)
	mixed.Condition.Mix = traffic.Scale(2).String()
	costs, _, _ = FromCells(append(cells, mixed), traffic)
	if math.Abs(costs[0].Cores.V-110*300e-6) > 1e-12 {
		t.Fatalf("from the mix cell: %+v", costs[0])
	}
	// Missing cells: one line naming what is missing.
	_, _, err = FromCells(cells[:1], traffic)
	if err == nil || !strings.Contains(err.Error(), "no cell of large over rest") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("missing: %v", err)
	}
}

// A tier with more CPUs than were pinned is verified on the CPUs
// measured: the saturation predicted for those is what probes can reach.
func TestVerifyOnMeasuredCPUs(t *testing.T) {
	p := plan(t, "2cpu", "small=100")
	f := Estimate(p, Costs{Protocol: api.GRPC, Cores: pt(0.5)})
	if f.MaxScale != 4 {
		t.Fatalf("max scale %v", f.MaxScale)
	}
	limit := 200.0 // calls/s: the one CPU measured saturates at scale 2
	probe := func(_ context.Context, pr api.Protocol, m results.Mix) (*results.Cell, error) {
		a := math.Min(m.Total(), limit)
		return &results.Cell{RateAchieved: a, Mix: []results.MixStat{{Scenario: api.Small, OfferedRate: m.Total(), AchievedRate: a}}}, nil
	}
	if err := verifyOn(context.Background(), Options{Plan: p, MeasuredCPUs: 1}, &f, probe); err != nil {
		t.Fatal(err)
	}
	if *f.PredictedMax != 2 || f.MeasuredMax == nil || *f.MeasuredMax != 2 || f.MaxScale != 4 {
		t.Fatalf("predicted %v, measured %v, max scale %v", *f.PredictedMax, f.MeasuredMax, f.MaxScale)
	}
}
