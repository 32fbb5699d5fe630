package fit

import (
	"context"
	"fmt"
	"math"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/link"
	loadplan "github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/loadgen/summary"
	"github.com/meteorbench/meteorbench/internal/results"
)

// VerifyScales are the probes of Verify, as multiples of the predicted
// saturation: below, at and above it. BeyondScales are the probes that
// follow, one at a time, while none has saturated the tier: the model
// may have predicted too low (CPU per call falls as the load grows), and
// a measured saturation says by how much.
var (
	VerifyScales = []float64{0.8, 1, 1.2}
	BeyondScales = []float64{1.5, 2, 3}
)

// A Prober runs traffic m over protocol pr, in the tier's condition, and
// returns its mix cell.
type Prober func(ctx context.Context, pr api.Protocol, m results.Mix) (*results.Cell, error)

// Verify checks f's predicted saturation (its MaxScale) by running the
// traffic scaled to VerifyScales of it, and fills PredictedMax, the
// probes and MeasuredMax, the scale whose throughput the first saturated
// probe achieved, with the prediction's error; or GeneratorBound when that
// probe was limited by the load generator, not the server. A traffic not
// saturated by then is probed at BeyondScales until it is; not saturated
// at the highest, MeasuredMax stays nil: the model is off by more than
// that.
func Verify(ctx context.Context, p Plan, f *results.Fit, probe Prober) error {
	pred := f.MaxScale
	if !(pred > 0) {
		return fmt.Errorf("%s: no saturation predicted: nothing to verify", f.Protocol)
	}
	f.PredictedMax = &pred
	f.Probes = nil
	for i, k := range append(append([]float64(nil), VerifyScales...), BeyondScales...) {
		if i >= len(VerifyScales) && (f.MeasuredMax != nil || f.GeneratorBound != "") {
			break
		}
		m := p.Traffic.Scale(pred * k)
		c, err := probe(ctx, f.Protocol, m)
		if err != nil {
			return err
		}
		f.Probes = append(f.Probes, probeOf(p.Tier, pred*k, m, c))
		if i >= len(VerifyScales)-1 {
			judge(f, p.Traffic.Total())
		}
	}
	f.Refined = refine(p, f)
	return nil
}

// RefineAt is the prediction error from which the answer says why the
// measured saturation differs from the predicted one.
const RefineAt = 0.05

// refine says why f's measured saturation differs from its prediction
// on p's tier ("" when within RefineAt, unmeasured, or the saturating
// probe's costs were not read): what that probe used of the tier against
// what the model expected at its rate. The verdict says by how much.
func refine(p Plan, f *results.Fit) string {
	if f.MeasuredMax == nil || f.PredictionError == nil || math.Abs(*f.PredictionError) < RefineAt {
		return ""
	}
	var pr *results.FitProbe
	for i := range f.Probes {
		if (f.Probes[i].Saturated || f.Probes[i].GeneratorBound != "") && voidProbe(f.Probes[i]) == "" {
			pr = &f.Probes[i]
			break
		}
	}
	if pr == nil || pr.Achieved <= 0 {
		return ""
	}
	r, _ := binding(pr.Utilisation)
	switch {
	case r == "":
		return ""
	case r != f.Binding:
		return fmt.Sprintf("%s bound at saturation (%s of the tier), not %s as predicted", ResourceName(r), pct(pr.Utilisation[r]), ResourceName(f.Binding))
	case pr.Utilisation[r] < SaturatedAt:
		return fmt.Sprintf("the traffic fell short of its rate with %s at %s of the tier: calls queued before %s was full", ResourceName(r), pct(pr.Utilisation[r]), ResourceName(r))
	case r == results.ResourceCPU && f.CPUModel != nil:
		m := f.CPUModel
		got := pr.Utilisation[r] * p.Tier.CPUs / pr.Achieved / usToCores
		want := (m.FixedCores/pr.Achieved)/usToCores + m.PerCallUS
		if m.Proportional {
			want = m.PerCallUS
		}
		beyond := ""
		if pr.Achieved > m.MaxRate*(1+ExtrapolationSlack) {
			beyond = fmt.Sprintf(", beyond the loads the model was fitted over (up to %s calls/s)", num(m.MaxRate))
		}
		return fmt.Sprintf("at saturation the server used %s µs of CPU a call, the model expected %s µs at %s calls/s%s",
			num(got), num(want), num(pr.Achieved), beyond)
	}
	return fmt.Sprintf("%s at %s of the tier at saturation", ResourceName(r), pct(pr.Utilisation[r]))
}

// probeOf summarises a verify probe's cell on tier t.
func probeOf(t Tier, scale float64, m results.Mix, c *results.Cell) results.FitProbe {
	pr := results.FitProbe{
		Scale: scale, Offered: m.Total(), Achieved: c.RateAchieved, Errors: c.Errors,
		ServerUtilisation: c.ServerUtilisation, LatencyP99US: c.LatencyUS.P99,
		ServerCPUBreakdown: c.ServerCPUBreakdown, ClientCPUBreakdown: c.ClientCPUBreakdown,
	}
	if c.GeneratorBottleneck {
		pr.GeneratorBound = c.GeneratorBottleneckReason
	}
	if c.ServerCPUUSPerCall != nil {
		r := c.CallsPerS
		pr.Utilisation = utilisation(t, *c.ServerCPUUSPerCall*r*usToCores, c.BytesPerCall.Sent*r*bytesMbit, c.BytesPerCall.Received*r*bytesMbit, nil)
	}
	for _, s := range c.Mix {
		if s.AchievedRate < (1-summary.MixShortfall)*s.OfferedRate {
			pr.Saturated = true
		}
	}
	return pr
}

// SaturatedFloor is the least utilisation of its busiest resource a
// saturated probe must show to be the tier's saturation: a probe that fell
// short of its rate with the tier's CPU and link below it was held back by
// the load generator (or this machine's other work), not by the tier.
const SaturatedFloor = 0.8

// judge reads the measured saturation off f's probes: the throughput of
// the first saturated one, as a scale of the traffic of total calls/s. A
// probe that fell short because of the load generator (its own CPU, or
// the tier's resources all under SaturatedFloor) is void, as capacity's
// are: the next one is read. When the last probes read are void, f is
// generator-bound; a void probe followed by a delivered one is not.
func judge(f *results.Fit, total float64) {
	f.MeasuredMax, f.PredictionError, f.GeneratorBound = nil, nil, ""
	void := ""
	for _, pr := range f.Probes {
		if !pr.Saturated && pr.GeneratorBound == "" {
			void = "" // a higher rate was delivered: the earlier void probe was the machine's moment
			continue
		}
		if why := voidProbe(pr); why != "" {
			if void == "" {
				void = why
			}
			continue
		}
		m := pr.Achieved / total
		e := (*f.PredictedMax - m) / m
		f.MeasuredMax, f.PredictionError = &m, &e
		return
	}
	f.GeneratorBound = void
}

// voidProbe says why a probe measured the load generator rather than the
// tier; "" when it did not.
func voidProbe(pr results.FitProbe) string {
	if pr.GeneratorBound != "" {
		return fmt.Sprintf("at %s: %s", ratio(pr.Scale), pr.GeneratorBound)
	}
	if r, _ := binding(pr.Utilisation); r != "" && pr.Utilisation[r] < SaturatedFloor {
		return fmt.Sprintf("at %s the traffic fell short of its rate with %s at %s of the tier (under %s): the load generator, or this machine's other work, held it back",
			ratio(pr.Scale), ResourceName(r), pct(pr.Utilisation[r]), pct(SaturatedFloor))
	}
	return ""
}

// Config is base set to run p's traffic in its tier's condition: the mix,
// the tier's link, and workers for the mix unless base names them
// (workers > 0). The own server's pinning (PinnedCPUs) is the caller's.
func (p Plan) Config(base loadplan.Config, m results.Mix, workers int) loadplan.Config {
	cfg := base
	cfg.Mix, cfg.Scenarios, cfg.Rate, cfg.Iterations = m, nil, 0, 0
	cfg.Links = []link.Spec{p.Tier.Link}
	cfg.Concurrency = []int{loadplan.MixWorkers(m)}
	if workers > 0 {
		cfg.Concurrency = []int{workers}
	}
	return cfg
}

// SessionProber probes through a load generator session with base's
// target and conditions, once per probe (no repeats), with workers
// workers (0: loadplan.MixWorkers of the probe's traffic).
func SessionProber(s *session.Session, p Plan, base loadplan.Config, workers int) Prober {
	return func(ctx context.Context, pr api.Protocol, m results.Mix) (*results.Cell, error) {
		cfg := p.Config(base, m, workers)
		cfg.Protocols, cfg.Repeat = []api.Protocol{pr}, 1
		ks := cfg.Cells()
		if len(ks) != 1 {
			return nil, fmt.Errorf("verify %s at %s: %d cells", pr, m, len(ks))
		}
		c, err := s.Measure(ctx, ks[0], cfg.CellBounds())
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}
