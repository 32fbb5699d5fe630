package fit

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
)

// load is a load at rate calls/s of a server whose CPU is fixed cores
// plus perCallUS a call.
func load(rate, fixed, perCallUS float64) Load {
	return Load{Rate: rate, ServerCores: fixed + perCallUS*1e-6*rate}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// FitCPU: a line through the loads when they give one, else proportional
// to the rate at the highest load (one load, a range within this
// machine's noise, CPU that fell as the rate grew).
func TestFitCPU(t *testing.T) {
	for _, tc := range []struct {
		name          string
		loads         []Load
		sameHost      bool
		fixed, perUS  float64
		proportional  bool
		minRate, maxR float64
	}{
		{"two loads, exact", []Load{load(50, 0.2, 1500), load(400, 0.2, 1500)}, false, 0.2, 1500, false, 50, 400},
		{"three loads, least squares", []Load{load(100, 0.1, 1000), {Rate: 200, ServerCores: 0.1 + 0.2 + 0.01}, {Rate: 300, ServerCores: 0.1 + 0.3 - 0.01}}, false, 0.11, 950, false, 100, 300},
		{"one load: proportional", []Load{load(50, 0.2, 1500)}, false, 0, (0.2 + 0.075) / 50 * 1e6, true, 50, 50},
		{"narrow range: proportional", []Load{load(100, 0.2, 1500), load(120, 0.2, 1500)}, false, 0, (0.2 + 0.18) / 120 * 1e6, true, 100, 120},
		{"CPU fell with the rate: proportional", []Load{{Rate: 100, ServerCores: 0.5}, {Rate: 400, ServerCores: 0.4}}, false, 0, 0.4 / 400 * 1e6, true, 100, 400},
		{"same host adds the callers'", []Load{{Rate: 100, ServerCores: 0.2, ClientCores: 0.1}, {Rate: 300, ServerCores: 0.4, ClientCores: 0.3}}, true, 0.1, 2000, false, 100, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := FitCPU(tc.loads, tc.sameHost)
			if m == nil || m.Proportional != tc.proportional || !near(m.FixedCores, tc.fixed) || math.Abs(m.PerCallUS-tc.perUS) > 1e-6*tc.perUS ||
				m.MinRate != tc.minRate || m.MaxRate != tc.maxR || len(m.Loads) != len(tc.loads) {
				t.Errorf("FitCPU = %+v, want fixed %v, %v µs a call, proportional %v, over %v-%v", m, tc.fixed, tc.perUS, tc.proportional, tc.minRate, tc.maxR)
			}
		})
	}
	if FitCPU(nil, false) != nil {
		t.Error("no loads: want no model")
	}
}

// The case: a server 20% busy whatever the load plus 1.6 ms a
// call saturates one CPU at 500 calls/s. Its cost at the traffic's 50
// calls/s, scaled in proportion, predicts 3.6x (181 calls/s, 64% early);
// with a second load the model predicts 10x, and the headroom's room is
// (0.7 - 0.2) / 1.6 ms = 312.5 calls/s.
func TestScalesByTheModel(t *testing.T) {
	p := plan(t, "1cpu", "post=50")
	one := Costs{Protocol: api.REST, Cores: pt(0.28), Rate: 50, Loads: []Load{load(50, 0.2, 1600)}}
	f := Estimate(p, one)
	if !near(f.MaxScale, 1/0.28) || f.CPUModel == nil || !f.CPUModel.Proportional {
		t.Fatalf("one load: max scale %v, model %+v", f.MaxScale, f.CPUModel)
	}
	if !near(f.Extrapolated, 1/0.28) {
		t.Errorf("one load: extrapolated %v, want %v", f.Extrapolated, 1/0.28)
	}
	two := one
	two.Loads = append(two.Loads, load(150, 0.2, 1600))
	f = Estimate(p, two)
	if !near(f.MaxScale, 10) || !near(f.RoomScale, 312.5/50) || f.Binding != results.ResourceCPU {
		t.Fatalf("two loads: max scale %v (want 10), room %v (want 6.25), binding %s", f.MaxScale, f.RoomScale, f.Binding)
	}
	if !near(f.Extrapolated, 500.0/150) {
		t.Errorf("extrapolated %v, want %v", f.Extrapolated, 500.0/150)
	}
	s := Sentence(p, &f)
	for _, want := range []string{"it fits, with room for 6.2x this traffic", "saturation predicted at 10x this traffic, 3.3x the highest load measured (150 calls/s): extrapolated"} {
		if !strings.Contains(s, want) {
			t.Errorf("sentence lacks %q:\n%s", want, s)
		}
	}
	// Within the loads measured (and ExtrapolationSlack): nothing extrapolated.
	two.Loads = append(two.Loads, load(480, 0.2, 1600))
	if f = Estimate(p, two); f.Extrapolated != 0 || strings.Contains(Sentence(p, &f), "extrapolated") {
		t.Errorf("measured up to 480 calls/s: extrapolated %v", f.Extrapolated)
	}
	// A link that saturates before the CPU binds.
	pl := plan(t, "1cpu/100mbit", "large=20")
	link := Costs{Protocol: api.REST, Cores: pt(0.3), Received: pt(40), Rate: 20, Loads: []Load{load(20, 0.2, 5000), load(40, 0.2, 5000)}}
	if f = Estimate(pl, link); f.Binding != results.ResourceLinkReceived || !near(f.MaxScale, 2.5) || !near(f.RoomScale, 0.7*2.5) {
		t.Errorf("link: binding %s, max scale %v, room %v", f.Binding, f.MaxScale, f.RoomScale)
	}
}

// The ramp measures at RampTarget of the saturation predicted so far
// until the highest load is RampEnough of it; where the CPU binds, it
// climbs on RampStep at a time until a load saturates the CPU, whose rate
// is then the tier's saturation.
func TestNextRamp(t *testing.T) {
	p := plan(t, "1cpu", "post=50")
	c := Costs{Protocol: api.GRPC, Cores: pt(0.28), Rate: 50, Loads: []Load{load(50, 0.2, 1600)}}
	k, ok := nextRamp(p, c)
	if !ok || !near(k, RampTarget/0.28) {
		t.Fatalf("first: %v %v, want %v", k, ok, RampTarget/0.28)
	}
	c.Loads = append(c.Loads, load(50*k, 0.2, 1600)) // 169.6 calls/s: the line predicts 10x
	k, ok = nextRamp(p, c)
	if !ok || !near(k, RampTarget*10) {
		t.Fatalf("second: %v %v, want %v", k, ok, RampTarget*10)
	}
	c.Loads = append(c.Loads, load(50*k, 0.2, 1600)) // 475 calls/s, 0.95 of 500
	k, ok = nextRamp(p, c)
	if !ok || !near(k, RampStep*9.5) {
		t.Fatalf("third: %v %v, want %v: the CPU binds, the ramp climbs on until it saturates", k, ok, RampStep*9.5)
	}
	sat := load(540, 0.2, 1600)
	sat.SaturatedCores, sat.Offered = 1, 600
	c.Loads = append(c.Loads, sat)
	k, ok = nextRamp(p, c)
	if !ok || !near(k, (475+600)/2.0/50) {
		t.Fatalf("fourth: %v %v, want %v: halfway between 475 delivered and 600 offered", k, ok, (475+600)/2.0/50)
	}
	c.Loads[len(c.Loads)-1].Offered = 520 // within RampBracket of 475
	if k, ok = nextRamp(p, c); ok {
		t.Fatalf("fifth: %v, want none: the CPU's saturation is bracketed", k)
	}
	// The saturated load is the tier's saturation, not the line's 500.
	if f := Estimate(p, c); !near(f.MaxScale, 540.0/50) || !near(f.RoomScale, 0.7*540/50) || f.Extrapolated != 0 {
		t.Errorf("with a saturated load: max scale %v, room %v, extrapolated %v; want 10.8, 7.56, 0", f.MaxScale, f.RoomScale, f.Extrapolated)
	}
	// On a tier of other CPUs the line is all there is.
	p2 := plan(t, "2cpu", "post=50")
	if f := Estimate(p2, c); !near(f.MaxScale, 1.8/(1600e-6)/50) || f.Extrapolated == 0 {
		t.Errorf("2 CPUs: max scale %v, extrapolated %v; want %v, extrapolated", f.MaxScale, f.Extrapolated, 1.8/(1600e-6)/50)
	}
}

// A cost taken while the load generator was short of CPU gives no fits
// verdict, however much room the model leaves.
func TestGeneratorShortNoVerdict(t *testing.T) {
	p := plan(t, "1cpu", "post=50")
	short := load(150, 0.2, 1600)
	short.GeneratorShort = "its CPU was 97% busy"
	f := Estimate(p, Costs{Protocol: api.REST, Cores: pt(0.28), Rate: 50, Loads: []Load{load(50, 0.2, 1600), short}})
	s := Sentence(p, &f)
	if f.Fits || !strings.Contains(f.CostsSuspect, "97% busy") || !strings.Contains(s, "no verdict, the load generator was the limit") || strings.Contains(s, "it fits") {
		t.Errorf("fits %v, suspect %q:\n%s", f.Fits, f.CostsSuspect, s)
	}
}

// --verify refines: a measured saturation off the prediction says by how
// much and what the saturating probe cost against the model.
func TestRefine(t *testing.T) {
	p := plan(t, "1cpu", "post=50")
	f := Estimate(p, Costs{Protocol: api.REST, Cores: pt(0.28), Rate: 50, Loads: []Load{load(50, 0.2, 1600), load(150, 0.2, 1600)}})
	pred := f.MaxScale // 10x: 500 calls/s
	f.PredictedMax = &pred
	// Saturated at 400 calls/s with the CPU full: 2.5 ms a call where the
	// model expected 0.2/400 s + 1.6 ms = 2.1 ms.
	f.Probes = []results.FitProbe{
		{Scale: 8, Offered: 400, Achieved: 400, Utilisation: map[string]float64{results.ResourceCPU: 0.84}},
		{Scale: 10, Offered: 500, Achieved: 400, Saturated: true, Utilisation: map[string]float64{results.ResourceCPU: 1}},
	}
	judge(&f, 50)
	r := refine(p, &f)
	f.Refined = r
	if s := Sentence(p, &f); !strings.Contains(s, "--verify measured 8.0x (25% off, more than 20%): no verdict (at saturation the server used 2,500 µs") {
		t.Errorf("the verdict does not say why:\n%s", s)
	}
	for _, want := range []string{"the server used 2,500 µs of CPU a call, the model expected 2,100 µs at 400 calls/s", "beyond the loads the model was fitted over (up to 150 calls/s)"} {
		if !strings.Contains(r, want) {
			t.Errorf("refined lacks %q:\n%s", want, r)
		}
	}
	// Within RefineAt: nothing to say.
	e := 0.01
	f.PredictionError = &e
	if r := refine(p, &f); r != "" {
		t.Errorf("within %v: %q", RefineAt, r)
	}
}

// LoadOf: a load whose traffic fell short of its rate with the server not
// busy was held back by the load generator (no verdict); short with the
// server saturated, or delivered, it was not.
func TestLoadOfShort(t *testing.T) {
	cpu := 2000.0
	for _, tc := range []struct {
		name     string
		busy     float64
		achieved float64
		short    bool
	}{
		{"delivered", 0.4, 199, false},
		{"short, server 51% busy", 0.51, 82, true},
		{"short, server saturated", 0.97, 82, false},
	} {
		u := tc.busy
		c := &results.Cell{CallsPerS: tc.achieved, ServerCPUUSPerCall: &cpu, ServerUtilisation: &u,
			Mix: []results.MixStat{{Scenario: api.Post, OfferedRate: 110, AchievedRate: tc.achieved * 110 / 200}}}
		if tc.achieved == 199 {
			c.Mix[0].AchievedRate = 110
		}
		l := LoadOf(c)
		if l.short() != tc.short || !near(l.ServerCores, cpu*1e-6*tc.achieved) {
			t.Errorf("%s: short %v (%q), %v cores", tc.name, l.short(), l.GeneratorShort, l.ServerCores)
		}
	}
}

// Ramp stops at a probe that fell short of its rate: with the tier's link
// at 80% or more that is the tier's limit (the load counts), otherwise
// the generator's (the load says so, and gives no verdict). The costs
// say 100 KB an answer, so the first ramp probe offers 118.75 calls/s
// (RampTarget of the link's 125); 45 go out.
func TestRampStopsWhenShort(t *testing.T) {
	p := plan(t, "1cpu/100mbit", "large=20")
	for _, tc := range []struct {
		name    string
		bytes   float64 // received per call in the probe
		suspect bool
	}{
		{"the link saturated", 240000, false}, // 45 calls/s × 240 KB = 86 Mbit/s
		{"the generator fell short", 100000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cpu, u := 100.0, 0.1
			var offered []float64
			prober := func(_ context.Context, _ api.Protocol, m results.Mix) (*results.Cell, error) {
				offered = append(offered, m.Total())
				c := &results.Cell{CallsPerS: 45, ServerCPUUSPerCall: &cpu, ServerUtilisation: &u,
					Mix: []results.MixStat{{Scenario: api.Large, OfferedRate: m.Total(), AchievedRate: 45}}}
				c.BytesPerCall.Received = tc.bytes
				return c, nil
			}
			c := Costs{Protocol: api.REST, Cores: pt(0.002), Received: pt(16), Rate: 20, Loads: []Load{load(20, 0, 100)}}
			if err := Ramp(context.Background(), p, &c, prober, nil); err != nil {
				t.Fatal(err)
			}
			if len(offered) != 1 || !near(offered[0], RampTarget*125) || len(c.Loads) != 2 || c.Loads[1].short() != tc.suspect {
				t.Fatalf("offered %v, loads %+v", offered, c.Loads)
			}
			if f := Estimate(p, c); (f.CostsSuspect != "") != tc.suspect {
				t.Errorf("costs suspect %q", f.CostsSuspect)
			}
		})
	}
}

// Where the CPU binds, the ramp climbs past its prediction until a probe
// saturates the CPU, and that load's rate is the saturation: a server
// whose CPU per call falls with the rate (cores = 0.3 + 0.7 × r/900 up to
// 900 calls/s, where it saturates) is predicted from the line at first,
// which is early.
func TestRampClimbsToCPUSaturation(t *testing.T) {
	p := plan(t, "1cpu", "post=50")
	var offered []float64
	prober := func(_ context.Context, _ api.Protocol, m results.Mix) (*results.Cell, error) {
		offered = append(offered, m.Total())
		r := math.Min(m.Total(), 900)
		cores := 0.3 + 0.7*r/900
		cpu, u := cores/r/usToCores, cores
		return &results.Cell{CallsPerS: r, RateAchieved: r, ServerCPUUSPerCall: &cpu, ServerUtilisation: &u,
			Mix: []results.MixStat{{Scenario: api.Post, OfferedRate: m.Total(), AchievedRate: r}}}, nil
	}
	// At the traffic's 50 calls/s: 0.339 cores, 6,778 µs a call.
	first, _ := prober(context.Background(), api.GRPC, p.Traffic)
	offered = nil
	c := Costs{Protocol: api.GRPC, Cores: pt(LoadOf(first).ServerCores), Rate: 50, Loads: []Load{LoadOf(first)}}
	if err := Ramp(context.Background(), p, &c, prober, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("offered %v", offered)
	if s := saturation(c.Loads); s == nil || s.Rate != 900 || s.Cores != 1 || len(offered) > RampProbes {
		t.Fatalf("offered %v; loads %+v: want the ramp to end with the CPU saturated at 900 calls/s", offered, c.Loads)
	}
	if o := offered[len(offered)-1]; o > RampBracket*900 {
		t.Errorf("the ramp ended offering %v, not within %v of the 900 calls/s served", o, RampBracket)
	}
	f := Estimate(p, c)
	if !near(f.MaxScale, 18) || f.CPUModel.Saturation == nil || f.Extrapolated != 0 {
		t.Errorf("max scale %v (want 18: 900 calls/s), saturation %+v, extrapolated %v", f.MaxScale, f.CPUModel.Saturation, f.Extrapolated)
	}
}
