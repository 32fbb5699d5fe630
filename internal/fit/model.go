package fit

import (
	"math"

	"github.com/meteorbench/meteorbench/api"
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
	f.Binding, f.MaxScale = binding(f.Utilisation)
	f.Fits = fits(f.Utilisation, p.Headroom)
	for _, t := range p.Tiers {
		if fits(utilisation(t, cores.V, c.Sent.V, c.Received.V, c.MemoryMiB), p.Headroom) {
			f.SmallestTier = t.Name
			break
		}
	}
	return f
}

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
	"and any cost that does not grow in proportion to the rate."
