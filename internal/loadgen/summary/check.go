package summary

import (
	"fmt"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Thresholds of a cell's self-checks (Session.check).
const (
	// LittleMin is the least share of its workers' time a closed-loop cell
	// must account for in counted calls: calls/s × their mean time in
	// flight against the workers that ran back to back (Little's law).
	LittleMin = 0.75
	// LittleMinTime is the shortest phase whose Little's law is checked.
	LittleMinTime = 200 * time.Millisecond
	// MinBytesPerRecord is the fewest bytes on the wire a record may take
	// (gzip brings the meteorites to about 37 B each): an answer or upload
	// below it does not carry the records asked for.
	MinBytesPerRecord = 20
	// WakeMin and WakeShare: a cell whose generator woke its goroutines
	// later, at the median, than both WakeMin and WakeShare of the calls'
	// median latency measured the generator, not the server. The canary
	// also waits behind the calls' own work (a worker decoding a stream
	// holds its processor: REST stream at concurrency 1 on one generator
	// CPU showed 2.5 ms against a 5.5 ms latency), which delays no answer
	// of that worker, and in closed loop behind workers that keep the
	// processor busy (small gRPC, 3 workers: 2.2 ms against calls of 126
	// µs, whose reader is rarely parked). So only open loop, where every
	// worker parks for its answer as the canary does, is judged by it; a
	// closed-loop cell reports the figure.
	WakeMin   = 500 * time.Microsecond
	WakeShare = 0.5
)

// Check is a cell's self-checks: the reasons its figures contradict each
// other or were distorted by the load generator or a stalled target, none
// when they hold. A suspect cell keeps its figures and gets no verdict.
// An open-loop cell short of its offered rate is not suspect but saturated
// (analysis.SaturatedBelow: no latency verdict; the session warns of the
// calls never sent): a server that cannot keep up is a finding. c is the
// cell's figures from phase ph of spec, working workers (Working) with a
// per-call timeout; ownPayload is a run of the user's payload, whose items
// have no least size.
func Check(c *results.Cell, spec plan.Spec, working int, ph engine.Result, timeout time.Duration, ownPayload bool) []string {
	t := ph.Tally
	var why []string
	add := func(format string, args ...any) { why = append(why, fmt.Sprintf(format, args...)) }
	secs := c.DurationS
	attempts := t.Calls + t.Errors

	if t.Abandoned > 0 {
		them := "them"
		if t.Abandoned == 1 {
			them = "it"
		}
		add("%s still running %v after the cell's end: the target stalled %s (counted as errors of class %s)",
			Plural(t.Abandoned, "call was", "calls were"), min(engine.CellGrace, timeout), them, results.ClassAbandoned)
	}
	// A phase's fixed costs (starting its goroutines, the last call's
	// wait) are most of a handful of calls: Little's law is checked on
	// phases long enough to be judged.
	if spec.RateRequested == 0 && secs >= LittleMinTime.Seconds() && attempts >= 10*int64(working) && c.StopReason == "" {
		// Little's law: calls in flight = calls/s × mean time in flight.
		// A stream scenario's message latency leaves its stream's setup
		// out, and a feed's counts from the server's stamp: its calls'
		// time in flight is the workers' busy time.
		inFlight := (t.Sum[results.KindLatency] + t.ErrSum) / 1e9 / secs
		if spec.Scenario.IsStream() {
			inFlight = t.Busy.Seconds() / secs
		}
		if inFlight < LittleMin*float64(working) || inFlight > 1.05*float64(working) {
			add("Little's law does not hold: %s calls/s × %s mean time in flight = %.2f calls in flight, but %d workers ran back to back",
				format.Rate(float64(attempts)/secs), format.US(inFlight*secs*1e6/float64(attempts)), inFlight, working)
		}
		// Time per batch: successful batches fill the workers' time, less
		// at most one batch per worker cut by the end.
		if b := t.Batch; b.N > 0 && t.Errors == 0 && spec.Batch > 1 {
			timed, cut := float64(b.N)*b.Mean/1e9, float64(working)*b.Mean/1e9
			if timed+cut < LittleMin*secs*float64(working) || timed > 1.05*secs*float64(working) {
				add("the time per batch does not add up: %d batches × %s = %s of %d workers' %s",
					b.N, format.US(b.Mean/1e3), format.Seconds(timed), working, format.Seconds(secs))
			}
		}
	}
	// (A payload's items have no least size: its answers are checked by
	// the adapters, item by item.)
	if want := recordsAsked(spec); want > 0 && t.Calls > 0 && !ownPayload {
		got, dir := c.BytesPerCall.Received, "received"
		if spec.Scenario == api.Post || spec.Scenario == api.Upload {
			got, dir = c.BytesPerCall.Sent, "sent"
		}
		if got < float64(want*MinBytesPerRecord) {
			add("%s %s per call cannot carry the %d records asked for (at least %d B each)", format.Bytes(got), dir, want, MinBytesPerRecord)
		}
	}
	if spec.RateRequested > 0 && t.Calls > 0 {
		if late, how := WokeLate(c); late {
			why = append(why, how)
		}
	}
	return why
}

// WokeLate says whether an open-loop cell's load generator woke its
// goroutines so late, at the median, that the cell's latency is largely
// its own (later than both WakeMin and WakeShare of the median latency),
// and how late. Such a cell is suspect; a capacity probe that gives one is
// void, the generator's, never a stall of the target.
func WokeLate(c *results.Cell) (bool, string) {
	g := c.GeneratorDelayUS
	if g == nil {
		return false, ""
	}
	wake := time.Duration(g.Wake.P50 * 1e3)
	if wake <= WakeMin || g.Wake.P50 <= WakeShare*c.LatencyUS.P50 {
		return false, ""
	}
	return true, fmt.Sprintf("the load generator ran goroutines woken by the network %s late at the median (p99 %s) against a median latency of %s: the latency is largely its own",
		format.US(g.Wake.P50), format.US(g.Wake.P99), format.US(c.LatencyUS.P50))
}

// recordsAsked is how many records a call of spec carries: 0 for small.
func recordsAsked(spec plan.Spec) int {
	switch {
	case spec.Scenario == api.Small, spec.Scenario == api.Chat, spec.Scenario.Method() == "": // small, chat, a user's endpoint, or a mix (its bytes per call average its scenarios')
		return 0
	case spec.Scenario.IsStream(): // upload, feed: a record a message
		return 1
	case spec.Records > 0:
		return spec.Records
	}
	return api.DefaultRecords
}

// Working is how many of a phase's workers had work: all of them, or with
// fewer iterations (batches) than workers, as many as the iterations; the
// rest idle by design, not for want of speed.
func Working(workers, iterations int) int {
	if iterations > 0 && iterations < workers {
		return iterations
	}
	return workers
}

// Plural is n followed by the singular or the plural.
func Plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
