package fit

import (
	"context"
	"fmt"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Options are a fit run's: the question, whether to verify, the workers
// (0: loadgen.MixWorkers of each run's traffic) and the caller's caveats
// (how the tier's CPUs were pinned).
type Options struct {
	Plan    Plan
	Verify  bool
	Workers int
	Notes   []string
	// MeasuredCPUs, when set and not the tier's, is the CPUs the server
	// was pinned to (PinnedCPUs): verify then checks the saturation
	// predicted for those, which is what its probes can reach.
	MeasuredCPUs float64
	// OnProbe, when set, is called after each verify probe (progress).
	OnProbe func(f *results.Fit, pr results.FitProbe)
}

// SaturatedAt is the server CPU utilisation from which costs are said to
// be those of a saturated server.
const SaturatedAt = 0.95

// Measure runs the traffic at its rates in base's condition (the tier's
// link; the caller pinned the own server to the tier's CPUs) through the
// session, answers from its mix cells, and verifies when asked. The
// document holds the cells, the answer and every probe; with an error, as
// much of it as there is.
func Measure(ctx context.Context, s *loadgen.Session, base loadgen.Config, o Options) (*results.Result, error) {
	res, err := s.Run(ctx, o.Plan.Config(base, o.Plan.Traffic, o.Workers))
	if err != nil {
		return res, err
	}
	costs, notes, err := FromCells(res.Cells, o.Plan.Traffic)
	if err != nil {
		return res, err
	}
	notes = append(append(o.Notes, notes...), saturated(res.Cells)...)
	res.FitPlan, res.Fit = Answer(o.Plan, costs, "measured", notes)
	if o.Verify {
		err = VerifyAll(ctx, s, base, o, res)
	}
	return res, err
}

// VerifyAll verifies every fit of res (Verify) through the session and
// rewrites the verdicts with what the probes measured.
func VerifyAll(ctx context.Context, s *loadgen.Session, base loadgen.Config, o Options, res *results.Result) error {
	prober := SessionProber(s, o.Plan, base, o.Workers)
	for i := range res.Fit {
		f := &res.Fit[i]
		probe := prober
		if o.OnProbe != nil {
			probe = func(ctx context.Context, pr api.Protocol, m results.Mix) (*results.Cell, error) {
				c, err := prober(ctx, pr, m)
				if err == nil {
					o.OnProbe(f, probeOf(o.Plan.Tier, m.Total()/o.Plan.Traffic.Total(), m, c))
				}
				return c, err
			}
		}
		if err := verifyOn(ctx, o, f, probe); err != nil {
			return err
		}
	}
	res.FitPlan = Describe(o.Plan, res.Fit, res.FitPlan.Source, res.FitPlan.Notes)
	return nil
}

// verifyOn verifies f on the CPUs measured: the tier's, or
// o.MeasuredCPUs, with the saturation predicted for those (noted).
func verifyOn(ctx context.Context, o Options, f *results.Fit, probe Prober) error {
	if o.MeasuredCPUs <= 0 || o.MeasuredCPUs == o.Plan.Tier.CPUs {
		return Verify(ctx, o.Plan, f, probe)
	}
	p := o.Plan
	p.Tier.CPUs = o.MeasuredCPUs
	g := *f
	g.Utilisation = utilisation(p.Tier, f.CPUCores, f.LinkMbit.Sent, f.LinkMbit.Received, f.MemoryMiB)
	_, g.MaxScale = binding(g.Utilisation)
	if err := Verify(ctx, p, &g, probe); err != nil {
		return err
	}
	f.PredictedMax, f.MeasuredMax, f.PredictionError, f.GeneratorBound, f.Probes = g.PredictedMax, g.MeasuredMax, g.PredictionError, g.GeneratorBound, g.Probes
	return nil
}

// saturated notes the mix cells whose costs were not taken at the
// traffic's rates: a saturated server's (busy from SaturatedAt on), or a
// rate the load generator fell short of with the server not busy.
func saturated(cells []results.Cell) []string {
	var out []string
	for i := range cells {
		c := &cells[i]
		short := ""
		for _, m := range c.Mix {
			if m.AchievedRate < (1-loadgen.MixShortfall)*m.OfferedRate {
				short = fmt.Sprintf("%s achieved %s of %s calls/s", m.Scenario, num(m.AchievedRate), num(m.OfferedRate))
				break
			}
		}
		busy := c.ServerUtilisation != nil && *c.ServerUtilisation >= SaturatedAt
		u := "unknown"
		if c.ServerUtilisation != nil {
			u = pct(*c.ServerUtilisation)
		}
		switch {
		case busy:
			out = append(out, fmt.Sprintf("%s: the traffic saturated the tier while its costs were measured (server %s busy): they are those of a server that could not keep up", c.Protocol.Title(), u))
		case short != "":
			out = append(out, fmt.Sprintf("%s: while its costs were measured, %s with the server %s busy: the load generator fell short, and the costs are those of that rate", c.Protocol.Title(), short, u))
		}
	}
	return out
}

// FromDocument answers p from an earlier run's document at path (fit
// --from): the document, its cells kept, with the answer added. A document
// that cannot be read or lacks the cells the traffic needs is an error of
// one line.
func FromDocument(ctx context.Context, path string, p Plan) (*results.Result, error) {
	doc, err := results.Load(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	costs, notes, err := FromCells(doc.Cells, p.Traffic)
	if err != nil {
		return nil, fmt.Errorf("--from %s: %w", path, err)
	}
	doc.FitPlan, doc.Fit = Answer(p, costs, "from "+path, notes)
	return doc, nil
}
