package fit

import (
	"fmt"
	"math"

	"github.com/meteorbench/meteorbench/internal/results"
)

// Answer fits every protocol's costs into p's tier and says so: the
// document's FitPlan (with the verdict) and one Fit per protocol, in the
// order of costs. source names where the costs came from; notes are the
// caveats of how they were measured.
func Answer(p Plan, costs []Costs, source string, notes []string) (*results.FitPlan, []results.Fit) {
	fits := make([]results.Fit, len(costs))
	for i, c := range costs {
		fits[i] = Estimate(p, c) // its MeasuredAt says at what load
	}
	return Describe(p, fits, source, notes), fits
}

// Describe is the FitPlan of fits, whose verdicts it (re)writes: after
// Verify has filled the measured saturations, it gives the checked answer.
func Describe(p Plan, fits []results.Fit, source string, notes []string) *results.FitPlan {
	for i := range fits {
		fits[i].Verdict = Sentence(p, &fits[i])
	}
	fp := &results.FitPlan{
		Tier:     p.Tier.Name,
		Traffic:  p.Traffic.String(),
		Headroom: p.Headroom,
		SameHost: p.SameHost,
		Source:   source,
		Verdict:  Verdict(p, fits),
		LeftOut:  LeftOut,
		Notes:    notes,
	}
	for _, t := range p.Tiers {
		fp.Tiers = append(fp.Tiers, t.Name)
	}
	return fp
}

// PinnedCPUs is how many CPUs the own server is pinned to for measuring
// tier t on a machine where avail CPUs may be pinned (the load generator
// keeps at least one), and a note when that is not the tier's count: a
// fractional tier is measured on whole CPUs, a larger one on what the
// machine can spare; either way CPU per call is taken for the tier's
// cores. 0 means the machine cannot pin apart (one CPU).
func PinnedCPUs(t Tier, avail int) (int, string) {
	want := int(math.Ceil(t.CPUs))
	n := min(want, avail-1)
	if n < 1 {
		return 0, fmt.Sprintf("tier %s: measured with the server unpinned, sharing this machine's %d CPU with the load generator (none to pin it apart)", t.Name, avail)
	}
	switch {
	case n < want:
		return n, fmt.Sprintf("tier %s: measured with the server on %d CPU(s), all this machine (%d CPUs) can pin apart from the load generator; the CPU per call measured there is taken for the tier's %s cores, and --verify checks the saturation predicted for the %d", t.Name, n, avail, cpus(t), n)
	case float64(n) != t.CPUs:
		return n, fmt.Sprintf("tier %s: measured with the server on %d CPU(s); the tier's %s cores are taken as that share of one", t.Name, n, cpus(t))
	}
	return n, ""
}
