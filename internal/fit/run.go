package fit

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	loadplan "github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/loadgen/summary"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Options are a fit run's: the question, whether to verify, the workers
// (0: loadplan.MixWorkers of each run's traffic) and the caller's caveats
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
	// OnRamp, when set, is called after each ramp probe (progress).
	OnRamp func(pr api.Protocol, scale float64, l Load)
}

// measured is the plan on the CPUs the server was pinned to: what probes
// can reach.
func (o Options) measured() Plan {
	p := o.Plan
	if o.MeasuredCPUs > 0 {
		p.Tier.CPUs = o.MeasuredCPUs
	}
	return p
}

// The ramp (Ramp): CPU per call depends on load (a Go server amortises
// its wake-ups over more calls when busy: small REST cost 52 µs a call at
// concurrency 1 and 16 µs at 8), so a cost taken at the traffic's own
// rate, with the server 9-32% busy, and scaled 10-18x predicted a 1-CPU
// tier's saturation 42-47% too early. The ramp measures the traffic again
// at RampTarget of the saturation predicted so far, until the highest
// load measured is at least RampEnough of it.
//
// That was not enough where the CPU binds: CPU per call keeps falling up
// to saturation, and a line fitted over loads up to 0.6x of its
// prediction still predicted post=50's saturation 30-38% early (REST
// 3.37x against 4.79x measured, gRPC 12.9x against 20.9x); at 0.85x,
// gRPC's server read 84% busy at 560 calls/s and saturated at 910. So
// where the CPU binds, the ramp climbs on, RampStep at a time, until a
// probe saturates the CPU (falls short of its rate with the server
// SaturatedFloor busy or more). A Go server serves more the more it is
// overloaded (post=50 over gRPC: 675 calls/s offered 808, 808 offered
// 966), so the rate a probe far beyond saturation achieves overstates
// it: the ramp then bisects between the highest rate delivered and the
// lowest offered that fell short until they are within RampBracket, and
// the saturation on these CPUs is what that lowest one achieved
// (saturation, cpuRates): measured, as verify measures it. At most
// RampProbes probes.
const (
	RampTarget  = 0.95
	RampEnough  = 0.85
	RampStep    = 1.25
	RampBracket = 1.1
	RampProbes  = 8
)

// Ramp measures c's traffic at more loads (nextRamp) until the CPU's
// saturation is bracketed, the loads reach a prediction bound by another
// resource, the tier's link saturates, the load generator falls short of
// a probe's rate (that load says so: no verdict), or RampProbes were run;
// each probe's load is added to c.Loads.
func Ramp(ctx context.Context, p Plan, c *Costs, probe Prober, onRamp func(api.Protocol, float64, Load)) error {
	for range RampProbes {
		k, ok := nextRamp(p, *c)
		if !ok {
			return nil
		}
		m := p.Traffic.Scale(k)
		cell, err := probe(ctx, c.Protocol, m)
		if err != nil {
			return err
		}
		if cell.ServerCPUUSPerCall == nil || cell.CallsPerS <= 0 {
			return nil // no CPU read: the model keeps the loads it has
		}
		l := LoadOf(cell) // its Offered is the mix's, m's total
		limit := ""
		if pr := probeOf(p.Tier, k, m, cell); pr.Saturated && !cell.GeneratorBottleneck {
			// Short of its rate with a resource of the tier at
			// SaturatedFloor or more: the tier's limit, as verify's
			// judge reads it, not the generator's.
			if r, _ := binding(pr.Utilisation); r != "" && pr.Utilisation[r] >= SaturatedFloor {
				l.GeneratorShort, limit = "", r
			}
		}
		if limit == results.ResourceCPU {
			l.SaturatedCores = p.Tier.CPUs
		}
		c.Loads = append(c.Loads, l)
		if onRamp != nil {
			onRamp(c.Protocol, k, l)
		}
		if (limit != "" && limit != results.ResourceCPU) || l.short() {
			// At the tier's link (its model is bytes, exact), or the
			// load generator could not send more.
			return nil
		}
	}
	return nil
}

// nextRamp is the scale of the traffic the ramp measures next: RampTarget
// of the saturation predicted so far, until the loads measured reach
// RampEnough of it; then, where the CPU binds, RampStep beyond the
// highest load, until one saturated the CPU; then halfway between the
// highest rate delivered and the lowest offered that saturated, until
// they are within RampBracket. False when the ramp is done (or nothing
// saturates).
func nextRamp(p Plan, c Costs) (float64, bool) {
	f := Estimate(p, c)
	if !(f.MaxScale > 0) || math.IsInf(f.MaxScale, 0) || c.Rate <= 0 {
		return 0, false
	}
	top := 0.0
	for _, l := range c.Loads {
		top = math.Max(top, l.Rate)
	}
	delivered, short := bracket(c.Loads)
	switch {
	case short != nil:
		if short.Offered <= RampBracket*delivered {
			return 0, false
		}
		return (delivered + short.Offered) / 2 / c.Rate, true
	case top/c.Rate < RampEnough*f.MaxScale:
		return RampTarget * f.MaxScale, true
	case f.Binding == results.ResourceCPU:
		return RampStep * top / c.Rate, true
	}
	return 0, false
}

// modelNotes say, per protocol, the CPU model and the loads it was
// fitted over.
func modelNotes(p Plan, costs []Costs) []string {
	var out []string
	for _, c := range costs {
		m := FitCPU(c.Loads, p.SameHost)
		if m == nil {
			continue
		}
		busy := []string{}
		for _, l := range m.Loads {
			if l.ServerUtilisation != nil {
				busy = append(busy, pct(*l.ServerUtilisation))
			}
		}
		b := ""
		if len(busy) > 0 {
			b = ", server " + strings.Join(busy, ", ") + " busy"
		}
		sat := ""
		if s := m.Saturation; s != nil {
			sat = fmt.Sprintf("; the CPU saturated at %s calls/s (%s this traffic) on %s CPU%s: the saturation on those CPUs is that rate, measured",
				num(s.Rate), ratio(s.Rate/c.Rate), num(s.Cores), plural(int(math.Ceil(s.Cores))))
		}
		if m.Proportional {
			out = append(out, fmt.Sprintf("%s: CPU taken as proportional to the rate, %s µs a call, measured at %s (%d load%s%s): the loads gave no line%s",
				c.Protocol.Title(), num(m.PerCallUS), rateRange(m), len(m.Loads), plural(len(m.Loads)), b, sat))
			continue
		}
		out = append(out, fmt.Sprintf("%s: server CPU = %s cores + %s µs a call, fitted over %s (%d loads%s)%s",
			c.Protocol.Title(), num(m.FixedCores), num(m.PerCallUS), rateRange(m), len(m.Loads), b, sat))
	}
	return out
}

func rateRange(m *results.FitCPUModel) string {
	if m.MinRate == m.MaxRate {
		return num(m.MinRate) + " calls/s"
	}
	return num(m.MinRate) + "-" + num(m.MaxRate) + " calls/s"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// SaturatedAt is the server CPU utilisation from which costs are said to
// be those of a saturated server.
const SaturatedAt = 0.95

// Measure runs the traffic at its rates in base's condition (the tier's
// link; the caller pinned the own server to the tier's CPUs) through the
// session, answers from its mix cells, and verifies when asked. The
// document holds the cells, the answer and every probe; with an error, as
// much of it as there is.
func Measure(ctx context.Context, s *session.Session, base loadplan.Config, o Options) (*results.Result, error) {
	res, err := s.Run(ctx, o.Plan.Config(base, o.Plan.Traffic, o.Workers))
	if err != nil {
		return res, err
	}
	costs, notes, err := FromCells(res.Cells, o.Plan.Traffic)
	if err != nil {
		return res, err
	}
	notes = append(append(o.Notes, notes...), saturated(res.Cells)...)
	prober := SessionProber(s, o.Plan, base, o.Workers)
	for i := range costs {
		if err := Ramp(ctx, o.measured(), &costs[i], prober, o.OnRamp); err != nil {
			res.FitPlan, res.Fit = Answer(o.Plan, costs, "measured", notes)
			return res, err
		}
	}
	res.FitPlan, res.Fit = Answer(o.Plan, costs, "measured", append(notes, modelNotes(o.Plan, costs)...))
	if o.Verify {
		err = VerifyAll(ctx, s, base, o, res)
	}
	return res, err
}

// VerifyAll verifies every fit of res (Verify) through the session and
// rewrites the verdicts with what the probes measured.
func VerifyAll(ctx context.Context, s *session.Session, base loadplan.Config, o Options, res *results.Result) error {
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
	_, g.MaxScale, _, _ = scales(p, g.Utilisation, f.CPUModel, p.Traffic.Total())
	if err := Verify(ctx, p, &g, probe); err != nil {
		return err
	}
	f.FitVerify = g.FitVerify
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
			if m.AchievedRate < (1-summary.MixShortfall)*m.OfferedRate {
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
