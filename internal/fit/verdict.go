package fit

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// MaxPredictionError is the largest error of a verified prediction
// (against the measured saturation) under which the verdict still claims
// a fit.
const MaxPredictionError = 0.20

// ResourceName names a resource in prose.
func ResourceName(r string) string {
	switch r {
	case results.ResourceCPU:
		return "CPU"
	case results.ResourceLinkSent:
		return "the link's requests (sent)"
	case results.ResourceLinkReceived:
		return "the link's answers (received)"
	case results.ResourceMemory:
		return "memory"
	}
	return r
}

// num and pct format a figure and a utilisation for prose, as every
// output does (internal/format): "0.93", "93%".
var (
	num = format.Number
	pct = format.Percent
)

// ratio formats a scale of the traffic: "1.84x", "0.75x".
func ratio(v float64) string { return format.Ratio(v) }

// cpus is a tier's CPUs as the tier names them: "1", "0.5".
func cpus(t Tier) string { return strconv.FormatFloat(t.CPUs, 'g', -1, 64) }

// Sentence is f's verdict: what the traffic needs of p's tier and whether
// it fits. "REST needs 0.93 of 1 CPU (93%, over the 70% you allow) and 41
// Mbit/s of answers (41%): it does not fit."
func Sentence(p Plan, f *results.Fit) string {
	name := f.Protocol.Title()
	over := func(r string) string {
		u := f.Utilisation[r]
		if u > p.Headroom {
			return fmt.Sprintf("%s, over the %s you allow", pct(u), pct(p.Headroom))
		}
		return pct(u)
	}
	cores := num(f.CPUCores)
	if ci := f.CPUCoresCI; ci != nil {
		cores += fmt.Sprintf(" [%s, %s]", num(ci.Lo), num(ci.Hi))
	}
	needs := []string{fmt.Sprintf("%s of %s CPU (%s)", cores, cpus(p.Tier), over(results.ResourceCPU))}
	if p.Tier.HasLink() {
		needs = append(needs, fmt.Sprintf("%s Mbit/s of answers (%s)", num(f.LinkMbit.Received), over(results.ResourceLinkReceived)),
			fmt.Sprintf("%s Mbit/s of requests (%s)", num(f.LinkMbit.Sent), over(results.ResourceLinkSent)))
	}
	if _, ok := f.Utilisation[results.ResourceMemory]; ok {
		needs = append(needs, fmt.Sprintf("%s MiB of memory (%s)", num(*f.MemoryMiB), over(results.ResourceMemory)))
	}
	s := name + " needs " + joinAnd(needs)
	if p.SameHost {
		s += " (its callers' CPU included)"
	}
	switch {
	case f.CostsSuspect != "":
		s += ": no verdict, the load generator was the limit while the costs were measured (" + f.CostsSuspect + ")"
	case f.GeneratorBound != "":
		s += ": --verify could not check it, the load generator was the bottleneck (" + f.GeneratorBound + ")"
		if f.Fits {
			s += "; by the model it fits"
		} else {
			s += "; by the model it does not fit"
		}
	case f.PredictionError != nil && math.Abs(*f.PredictionError) > MaxPredictionError:
		s += fmt.Sprintf(": the model predicted saturation at %s this traffic, --verify measured %s (%s off, more than %s): no verdict",
			ratio(*f.PredictedMax), ratio(*f.MeasuredMax), pct(math.Abs(*f.PredictionError)), pct(MaxPredictionError))
		if f.Refined != "" {
			s += " (" + f.Refined + ")"
		}
	case f.PredictedMax != nil && f.MeasuredMax == nil:
		s += fmt.Sprintf(": --verify did not saturate the server at %s the predicted limit: the model is off by more than %s, no verdict",
			ratio(BeyondScales[len(BeyondScales)-1]), pct(MaxPredictionError))
	case f.Fits:
		s += fmt.Sprintf(": it fits, with room for %s this traffic", ratio(room(p, f)))
	default:
		s += ": it does not fit"
		if f.MaxScale > 0 {
			s += fmt.Sprintf(" (within the headroom up to %s this traffic)", ratio(room(p, f)))
		}
	}
	if f.Extrapolated > 0 && f.MeasuredMax == nil {
		s += fmt.Sprintf("; saturation predicted at %s this traffic, %s the highest load measured (%s calls/s): extrapolated",
			ratio(f.MaxScale), ratio(f.Extrapolated), num(f.CPUModel.MaxRate))
	}
	if f.PredictionError != nil && math.Abs(*f.PredictionError) <= MaxPredictionError {
		s += fmt.Sprintf(" (verified: saturation measured at %s, predicted %s", ratio(*f.MeasuredMax), ratio(*f.PredictedMax))
		if f.Refined != "" {
			s += "; " + f.Refined
		}
		s += ")"
	}
	if len(p.Tiers) > 0 {
		if f.SmallestTier != "" {
			s += "; the smallest tier it fits in: " + f.SmallestTier
		} else {
			s += "; it fits in none of the tiers given"
		}
	}
	return s + "."
}

// room is how many times the traffic can grow within the headroom: the
// CPU model's (RoomScale) when there is one, else in proportion.
func room(p Plan, f *results.Fit) float64 {
	if f.RoomScale > 0 {
		return f.RoomScale
	}
	return p.Headroom * f.MaxScale
}

// Verdict is the answer for every protocol: their sentences and which
// resource binds which. "... CPU binds both."
func Verdict(p Plan, fs []results.Fit) string {
	var parts []string
	byBinding := map[string][]api.Protocol{}
	var order []string
	for i := range fs {
		parts = append(parts, Sentence(p, &fs[i]))
		b := fs[i].Binding
		if _, ok := byBinding[b]; !ok {
			order = append(order, b)
		}
		byBinding[b] = append(byBinding[b], fs[i].Protocol)
	}
	switch {
	case len(order) == 1 && len(fs) == 2:
		parts = append(parts, upper(ResourceName(order[0]))+" binds both.")
	case len(order) == 1 && len(fs) > 2:
		parts = append(parts, upper(ResourceName(order[0]))+" binds all.")
	case len(order) > 1:
		var b []string
		for _, r := range order {
			var names []string
			for _, pr := range byBinding[r] {
				names = append(names, pr.Title())
			}
			b = append(b, ResourceName(r)+" binds "+joinAnd(names))
		}
		parts = append(parts, upper(strings.Join(b, ", "))+".")
	}
	return strings.Join(parts, " ")
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// joinAnd joins "a", "a and b", "a, b and c".
func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}
