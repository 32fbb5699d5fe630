package fit

import (
	"fmt"
	"maps"
	"math"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/summary"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Plan is a fit question: a traffic mix on a tier, the utilisation to stay
// under, and the tiers to choose the smallest fitting one from.
type Plan struct {
	Tier    Tier
	Tiers   []Tier // smallest first (ParseTiers); may be empty
	Traffic results.Mix
	// Headroom is the utilisation allowed of every resource, in (0, 1].
	Headroom float64
	// SameHost adds the callers' CPU per call to the server's: the
	// services that call each other share the tier.
	SameHost bool
}

// Value is a figure with its interval (Lo = Hi = V without repeats).
type Value struct{ V, Lo, Hi float64 }

// scaled is v times f.
func (v Value) scaled(f float64) Value { return Value{v.V * f, v.Lo * f, v.Hi * f} }

// plus is v + o, intervals added end to end (a bound, not a CI).
func (v Value) plus(o Value) Value { return Value{v.V + o.V, v.Lo + o.Lo, v.Hi + o.Hi} }

// hasInterval reports whether v is more than a point.
func (v Value) hasInterval() bool { return v.Lo != v.Hi }

// Costs are what one protocol's traffic, at scale 1, takes each second.
type Costs struct {
	Protocol api.Protocol
	// Cores is server CPU seconds per second; ClientCores the callers'
	// (for Plan.SameHost).
	Cores, ClientCores Value
	// Sent and Received are Mbit/s each way (requests, answers).
	Sent, Received Value
	// MemoryMiB is the server's peak resident set under the traffic; nil
	// when unknown.
	MemoryMiB *float64
	// HeapMiB is the server's Go heap in use at the end of the traffic;
	// nil when unknown.
	HeapMiB *float64
	// MeasuredAt is the server's CPU utilisation while the costs were
	// measured; nil when unknown or from cells at several loads.
	MeasuredAt *float64
	// Rate is the traffic's calls/s the costs above are for (its total).
	Rate float64
	// Loads are the loads the server's CPU was measured at: the traffic's
	// own and the ramp's (Ramp), each with the callers' CPU, for the CPU
	// model (FitCPU).
	Loads []Load
}

// Load is one measurement of a protocol's traffic at some rate.
type Load struct {
	Rate                     float64 // calls/s achieved, the whole mix
	Offered                  float64 // calls/s offered, the whole mix
	ServerCores, ClientCores float64 // CPU busy, cores
	ServerUtilisation        *float64
	// GeneratorShort says why the load generator was short of CPU ("":
	// it was not): such a cost gives no fits verdict.
	GeneratorShort string
	// SaturatedCores, when not zero, says the load fell short of its rate
	// with the server's CPU (that many cores) saturated: Rate is what
	// those cores served under that much overload (saturation).
	SaturatedCores float64
}

// bracket is how the loads bracket the CPU's saturation: the highest rate
// a load delivered, and the saturated load offered least (nil when no
// load saturated the CPU).
func bracket(loads []Load) (delivered float64, short *Load) {
	for i, l := range loads {
		switch {
		case l.SaturatedCores > 0:
			if short == nil || l.Offered < short.Offered {
				short = &loads[i]
			}
		case !l.short():
			delivered = math.Max(delivered, l.Rate)
		}
	}
	return delivered, short
}

// saturation is the CPU saturation the loads measured: the rate achieved
// by the saturated load offered least (a Go server serves more the more
// it is overloaded: deeper queues amortise its wake-ups, post=50 over
// gRPC did 675 calls/s when offered 808 and 808 when offered 966), but no
// less than the highest rate a load delivered. Nil when no load
// saturated the CPU.
func saturation(loads []Load) *results.FitSaturation {
	delivered, short := bracket(loads)
	if short == nil {
		return nil
	}
	return &results.FitSaturation{Rate: math.Max(short.Rate, delivered), Cores: short.SaturatedCores}
}

// RampRange is the narrowest spread of rates (highest over lowest) that
// gives a line: closer loads differ by less than this machine's noise.
const RampRange = 1.3

// FitCPU fits the server's CPU (with sameHost the callers' too) over the
// loads as FixedCores + PerCallUS × rate, by least squares. With one
// load, loads spread less than RampRange, or a slope that is not positive
// (CPU that did not grow with the rate: noise), it is Proportional: the
// cost per call at the highest load, times the rate. A load that
// saturated the CPU is the model's Saturation (rateAt). Nil without
// loads.
func FitCPU(loads []Load, sameHost bool) *results.FitCPUModel {
	if len(loads) == 0 {
		return nil
	}
	m := &results.FitCPUModel{MinRate: math.Inf(1), Saturation: saturation(loads)}
	var top Load
	var sx, sy float64
	for _, l := range loads {
		y := l.cores(sameHost)
		m.Loads = append(m.Loads, results.FitLoad{Rate: l.Rate, Cores: y, ServerUtilisation: l.ServerUtilisation, GeneratorShort: l.GeneratorShort, SaturatedCores: l.SaturatedCores})
		m.MinRate, m.MaxRate = math.Min(m.MinRate, l.Rate), math.Max(m.MaxRate, l.Rate)
		if l.Rate >= top.Rate {
			top = l
		}
		sx, sy = sx+l.Rate, sy+y
	}
	n := float64(len(loads))
	mx, my := sx/n, sy/n
	var sxx, sxy float64
	for _, l := range loads {
		dx := l.Rate - mx
		sxx += dx * dx
		sxy += dx * (l.cores(sameHost) - my)
	}
	if len(loads) >= 2 && m.MaxRate >= RampRange*m.MinRate && sxx > 0 && sxy > 0 {
		b := sxy / sxx
		m.PerCallUS, m.FixedCores = b/usToCores, my-b*mx
		return m
	}
	m.Proportional = true
	if top.Rate > 0 {
		m.PerCallUS = top.cores(sameHost) / top.Rate / usToCores
	}
	return m
}

// LoadOf is the load a mix cell measured: its calls/s and the CPU it
// cost, per second.
func LoadOf(c *results.Cell) Load {
	l := Load{Rate: c.CallsPerS, ClientCores: c.ClientCPUUSPerCall * c.CallsPerS * usToCores, ServerUtilisation: c.ServerUtilisation}
	for _, m := range c.Mix {
		l.Offered += m.OfferedRate
	}
	if c.ServerCPUUSPerCall != nil {
		l.ServerCores = *c.ServerCPUUSPerCall * c.CallsPerS * usToCores
	}
	if c.GeneratorBottleneck {
		l.GeneratorShort = c.GeneratorBottleneckReason
		return l
	}
	if u := c.ServerUtilisation; u == nil || *u < SaturatedFloor {
		// Short of its rate with the server not busy: the generator (or
		// this machine's other work) could not send it, as verify's
		// void probes.
		for _, m := range c.Mix {
			if m.AchievedRate < (1-summary.MixShortfall)*m.OfferedRate {
				busy := "unknown"
				if u != nil {
					busy = pct(*u)
				}
				l.GeneratorShort = fmt.Sprintf("%s achieved %s of %s calls/s with the server %s busy: the load generator, or this machine's other work, held it back",
					m.Scenario, num(m.AchievedRate), num(m.OfferedRate), busy)
				break
			}
		}
	}
	return l
}

// short reports whether l fell short of its rate for want of the load
// generator.
func (l Load) short() bool { return l.GeneratorShort != "" }

// cores is l's CPU: the server's, plus the callers' with sameHost.
func (l Load) cores(sameHost bool) float64 {
	if sameHost {
		return l.ServerCores + l.ClientCores
	}
	return l.ServerCores
}

// rateAt is the rate at which m's CPU reaches cores; +Inf when it never
// does (no cost per call).
func rateAt(m *results.FitCPUModel, cores float64) float64 {
	if !(m.PerCallUS > 0) {
		return math.Inf(1)
	}
	return math.Max(0, (cores-m.FixedCores)/(m.PerCallUS*usToCores))
}

// cpuRates are the rates at which m's CPU saturates the tier's cpus and
// reaches headroom of them; ok is false when m gives neither (a
// proportional model that saw no saturation). On the CPUs a load
// saturated they are measured, not read off the line: the rate that load
// achieved, and headroom of it. CPU per call keeps falling up to
// saturation, faster than a line fitted below it says (post=50's gRPC
// server read 84% busy at 560 calls/s and saturated at 910).
func cpuRates(m *results.FitCPUModel, cpus, headroom float64) (sat, room float64, ok bool) {
	if m == nil {
		return 0, 0, false
	}
	if s := m.Saturation; s != nil && s.Cores == cpus {
		return s.Rate, headroom * s.Rate, true
	}
	if m.Proportional {
		return 0, 0, false
	}
	return rateAt(m, cpus), rateAt(m, headroom*cpus), true
}

// generatorShort is why some load was taken with the generator short of
// CPU ("" when none was).
func generatorShort(loads []Load) string {
	for _, l := range loads {
		if l.GeneratorShort != "" {
			return fmt.Sprintf("at %s calls/s: %s", num(l.Rate), l.GeneratorShort)
		}
	}
	return ""
}

// Estimate fits c into p's tier: what the traffic needs, each resource's
// utilisation, the binding one, the scale at saturation, whether it fits
// within the headroom and the smallest of p.Tiers it fits in.
func Estimate(p Plan, c Costs) results.Fit {
	cores := c.Cores
	if p.SameHost {
		cores = cores.plus(c.ClientCores)
	}
	f := results.Fit{
		Protocol:    c.Protocol,
		CPUCores:    cores.V,
		LinkMbit:    results.FitLink{Sent: c.Sent.V, Received: c.Received.V},
		MemoryMiB:   c.MemoryMiB,
		HeapMiB:     c.HeapMiB,
		MeasuredAt:  c.MeasuredAt,
		Utilisation: utilisation(p.Tier, cores.V, c.Sent.V, c.Received.V, c.MemoryMiB),
	}
	if cores.hasInterval() {
		f.CPUCoresCI = &results.Interval{Median: cores.V, Lo: cores.Lo, Hi: cores.Hi, Confidence: 0.95}
	}
	if c.Sent.hasInterval() || c.Received.hasInterval() {
		f.LinkMbitLo = &results.FitLink{Sent: c.Sent.Lo, Received: c.Received.Lo}
		f.LinkMbitHi = &results.FitLink{Sent: c.Sent.Hi, Received: c.Received.Hi}
	}
	f.CPUModel = FitCPU(c.Loads, p.SameHost)
	f.Binding, f.MaxScale, f.RoomScale, f.Extrapolated = scales(p, f.Utilisation, f.CPUModel, c.Rate)
	f.Fits = fits(f.Utilisation, p.Headroom)
	if why := generatorShort(c.Loads); why != "" {
		f.CostsSuspect = why
		f.Fits = false
	}
	for _, t := range p.Tiers {
		if fits(utilisation(t, cores.V, c.Sent.V, c.Received.V, c.MemoryMiB), p.Headroom) {
			f.SmallestTier = t.Name
			break
		}
	}
	return f
}

// scales are, on p's tier, the binding resource at saturation, the
// traffic's scale at saturation, the scale at which a resource reaches
// the headroom, and how far (> 1) the saturation lies beyond the highest
// rate the CPU model m saw (0: within it). u is the utilisation at the
// traffic's rate (calls/s). The CPU's scales are m's when it is a line
// (CPU per call changes with the rate) or saw the CPU saturate
// (cpuRates), else u's in proportion.
func scales(p Plan, u map[string]float64, m *results.FitCPUModel, rate float64) (bind string, maxScale, room, extrapolated float64) {
	bind, maxScale = binding(u)
	room = p.Headroom * maxScale
	if sat, roomRate, ok := cpuRates(m, p.Tier.CPUs, p.Headroom); ok && rate > 0 {
		atSat := maps.Clone(u)
		atSat[results.ResourceCPU] = rate / sat
		bind, maxScale = binding(atSat)
		atRoom := maps.Clone(u)
		for r := range atRoom {
			atRoom[r] /= p.Headroom
		}
		atRoom[results.ResourceCPU] = rate / roomRate
		_, room = binding(atRoom)
	}
	if m != nil && maxScale > 0 && m.MaxRate > 0 {
		if x := maxScale * rate / m.MaxRate; x > 1+ExtrapolationSlack {
			extrapolated = x
		}
	}
	return bind, maxScale, room, extrapolated
}

// ExtrapolationSlack is how far beyond the highest load measured a
// predicted saturation may lie before the answer says it extrapolates.
const ExtrapolationSlack = 0.1

// utilisation is each resource's share of tier t that the needs take.
func utilisation(t Tier, cores, sent, received float64, memMiB *float64) map[string]float64 {
	u := map[string]float64{results.ResourceCPU: cores / t.CPUs}
	if t.HasLink() {
		u[results.ResourceLinkSent] = sent / t.linkMbit()
		u[results.ResourceLinkReceived] = received / t.linkMbit()
	}
	if t.MemoryMiB > 0 && memMiB != nil {
		u[results.ResourceMemory] = *memMiB / t.MemoryMiB
	}
	return u
}

// resourceOrder is the order resources are named and ties are broken in.
var resourceOrder = []string{results.ResourceCPU, results.ResourceLinkReceived, results.ResourceLinkSent, results.ResourceMemory}

// binding is the resource of the highest utilisation, and how many times
// the traffic can grow before the highest of those that grow with it
// (every one but memory) saturates; +Inf is reported as 0 (no need at
// all).
func binding(u map[string]float64) (string, float64) {
	best, bestU, rateU := "", -1.0, 0.0
	for _, r := range resourceOrder {
		v, ok := u[r]
		if !ok {
			continue
		}
		if v > bestU {
			best, bestU = r, v
		}
		if r != results.ResourceMemory {
			rateU = math.Max(rateU, v)
		}
	}
	if rateU <= 0 {
		return best, 0
	}
	return best, 1 / rateU
}

// fits reports whether every utilisation is within the headroom.
func fits(u map[string]float64, headroom float64) bool {
	for _, v := range u {
		if v > headroom {
			return false
		}
	}
	return true
}

// LeftOut is what the model does not account for, said once per answer.
const LeftOut = "The model leaves out other processes on the tier, per-packet overhead (TCP/IP headers, TLS records), " +
	"another CPU model's speed and noisy neighbours, memory that grows with the rate (it is taken as measured), " +
	"and any change of CPU per call beyond the loads measured (CPU is modelled as a fixed cost plus a cost per call, fitted over them)."
