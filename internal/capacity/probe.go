package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/loadgen/summary"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Void thresholds: a failing probe is void when the load generator, not
// the server, could not deliver the rate.
const (
	// VoidLate is the fraction of calls that may start late with a worker
	// free in time (the generator woke late) before the probe is void.
	VoidLate = 0.01
	// VoidMinCalls is the fewest late calls that void a probe: on a short
	// probe 1% is a handful, within a noisy machine's scheduling jitter.
	VoidMinCalls = 5
	// ServerSaturated is the share of its cores (Cell.ServerUtilisation)
	// at which a server is at its limit: a probe that failed then failed
	// at the server's capacity, even if the generator was short of CPU
	// too. On the 2-core VM, server and generator pinned a CPU each, the
	// lean REST client costs about what the server does per small call
	// (on loopback each side pays for delivering its own writes), so near
	// the server's knee the generator was at 0.8-0.9 of its core as well,
	// and every failure there read "generator-bound".
	ServerSaturated = 0.9
)

// probe measures one open-loop cell at rate.
func (p *Plan) probe(ctx context.Context, k results.CellKey, rate float64, d time.Duration) (Outcome, error) {
	k.RateRequested = rate
	workers := p.workers(rate)
	k.Concurrency = workers
	c, err := p.session.Measure(ctx, k, plan.Bounds{Warmup: p.ProbeWarmup, Duration: d})
	if c == nil {
		if err == nil {
			err = errors.New("no cell measured")
		}
		return Outcome{}, err
	}
	o := Outcome{
		Offered:   rate,
		Achieved:  achieved(c, d),
		Latency:   c.LatencyUS.At(p.Objective.Percentile),
		P50:       c.LatencyUS.P50,
		Calls:     c.Calls,
		Errors:    c.Errors,
		Duration:  time.Duration(c.DurationS * float64(time.Second)),
		StopEarly: c.StopReason,
	}
	o.Stalled, o.StallWhy = stalled(c, p.Base.Timeout)
	o.ServerCPUUS, o.ServerCores = serverCPU(c)
	// Only a failure can be the generator's: latency counts from each
	// call's intended start, so a late start makes a pass harder, never
	// easier, and a probe that passed anyway stands.
	if v, _ := p.Objective.Judge(o); v == Fail {
		o.Void, o.VoidWhy = void(c, workers, p.Objective)
	}
	if errors.Is(err, session.ErrInterrupted) {
		return o, err
	}
	// A cell that failed (the target went away) is a failed probe, not the
	// end of the search: the health check decides the next probe.
	return o, nil
}

// serverCPU is a cell's server CPU per call (µs) and the CPUs the server
// had (its utilisation is its CPU over its CPUs: they are what the CPU
// per call, the calls and the utilisation give, rounded to whole CPUs as
// the server's GOMAXPROCS is); zeros when its metrics were not read.
func serverCPU(c *results.Cell) (perCallUS, cores float64) {
	if c.ServerCPUUSPerCall == nil || c.ServerUtilisation == nil || *c.ServerUtilisation <= 0 || c.DurationS <= 0 || c.Calls == 0 {
		return 0, 0
	}
	perCallUS = *c.ServerCPUUSPerCall
	cores = math.Round(perCallUS * 1e-6 * float64(c.Calls) / c.DurationS / *c.ServerUtilisation)
	if cores < 1 {
		return perCallUS, 0
	}
	return perCallUS, cores
}

// achieved is the rate a probe delivered: its calls over the schedule's
// window. The cell's own RateAchieved divides by the time until the last
// call in flight ended, which adds the drain to every probe (a 20 ms
// drain is 1% of a 2 s probe: "achieved 396 of 400" at any rate).
func achieved(c *results.Cell, window time.Duration) float64 {
	if window <= 0 || c.DurationS <= 0 {
		return c.RateAchieved
	}
	return float64(c.Calls+c.Errors) / window.Seconds()
}

// void says why the load generator, not the server, made a failing probe
// fail, unless the server used ServerSaturated of its cores: its CPU was
// short (the cell's GeneratorBottleneck), it woke its
// goroutines late (summary.WokeLate), or the server
// answered within the bound once each call was sent (the latency from the
// actual send met the objective, errors within the budget) and the calls
// were sent late because the generator woke late or had every worker
// busy. Otherwise a failure the server's own latency explains is the
// server's, whatever the generator did: on one machine an overloaded
// server also delays the generator.
func void(c *results.Cell, workers int, obj Objective) (bool, string) {
	attempts := c.Calls + c.Errors
	if attempts == 0 || c.DurationS <= 0 || c.StopReason != "" {
		return false, ""
	}
	if float64(c.Errors) > obj.MaxErrors*float64(attempts) {
		return false, ""
	}
	if u := c.ServerUtilisation; u != nil && *u >= ServerSaturated {
		// The server had no CPU to spare (on its own cores: sharing
		// them with the generator, it cannot reach this share).
		return false, ""
	}
	if c.GeneratorBottleneck {
		// Its CPU, not the server's, was short (summary.GeneratorShare,
		// MachineShare): on a shared machine the late reading of answers
		// is in the latency from the send too, so that one cannot clear
		// the server here.
		return true, c.GeneratorBottleneckReason
	}
	if late, why := summary.WokeLate(c); late {
		// Its goroutines woke late (the cell is suspect for it): the
		// answers waited for the generator, not the server.
		return true, why
	}
	bound := float64(obj.Bound.Microseconds())
	if c.LatencyUncorrectedUS == nil || c.LatencyUncorrectedUS.At(obj.Percentile) > bound {
		return false, ""
	}
	late := max(VoidMinCalls, int64(VoidLate*float64(attempts)))
	queued := c.LateCalls - c.GeneratorLateCalls
	// Every worker busy the whole probe (Little's law: calls in flight =
	// achieved rate x latency from the send): the calls queued for a
	// worker, whatever the dispatcher's clock says (it is late too when it
	// waited for a worker to take the previous call).
	if inFlight := c.RateAchieved * c.LatencyUncorrectedUS.Mean / 1e6; c.LateCalls > late && inFlight >= 0.9*float64(workers) {
		return true, fmt.Sprintf("all %d workers were busy while the server met the objective: %d calls waited for one", workers, c.LateCalls)
	}
	if c.GeneratorLateCalls > late {
		return true, fmt.Sprintf("%d of %d calls started late with a worker free: the load generator woke late", c.GeneratorLateCalls, attempts)
	}
	if queued > late {
		return true, fmt.Sprintf("all %d workers were busy while the server met the objective: %d calls waited for one", workers, queued)
	}
	return false, ""
}

// stalled says why a probe's cell is no measurement of the server: the
// target stalled (calls still running at the cell's hard end, abandoned,
// or calls that timed out) or the load generator marked the cell suspect.
// A server that stopped for a few seconds (SIGSTOP, a pause of its host)
// gives such a cell, and its figures look like an overload: taken as a
// failure, the stall would set the capacity. A timeout (10 s by default)
// is far beyond any latency bound the search uses, so a call that reached
// it says stall, not queueing; far beyond the capacity with many workers
// (--concurrency fixed high), calls can take that long too, and the series
// then fails with this reason rather than report a rate.
func stalled(c *results.Cell, timeout time.Duration) (bool, string) {
	var why []string
	if n := c.ErrorClasses[results.ClassAbandoned]; n > 0 {
		why = append(why, fmt.Sprintf("%s still running at the probe's hard end (abandoned)", calls(n)))
	}
	if n := c.ErrorClasses[results.ClassTimeout]; n > 0 {
		s := calls(n) + " timed out"
		if timeout > 0 {
			s += " (--timeout " + timeout.String() + ")"
		}
		why = append(why, s)
	}
	// The generator's lateness makes a cell suspect too, but it is no
	// stall of the target (probe: void instead).
	_, late := summary.WokeLate(c)
	if suspect := slices.DeleteFunc(slices.Clone(c.Suspect), func(s string) bool { return s == late }); len(suspect) > 0 {
		why = append(why, "the cell is suspect: "+strings.Join(suspect, "; "))
	}
	return len(why) > 0, strings.Join(why, "; ")
}

func calls(n int64) string {
	if n == 1 {
		return "1 call"
	}
	return fmt.Sprintf("%d calls", n)
}
