// Package capacity finds the highest open-loop rate a target sustains under
// a latency objective, per protocol, side by side:
//
//	Objective + probes ──Search──▶ one bracketed rate per series, every probe kept
//
// A search grows the offered rate exponentially from a low start (by
// Settings.Leap while the objective's percentile is far below its bound,
// by Settings.Growth near it) until a probe fails, then bisects the
// bracket (geometrically) down to the precision, confirms the found rate
// in a longer probe and repeats probes at the boundary. A failure of the
// grow or bisect phase counts once it repeats at the same rate
// (Settings.FailRetries): near the knee one short probe's p99 swings
// several-fold on a shared machine, and a failure taken at its word sets
// the top of the bracket for the rest of the search, where a lucky pass
// is caught by the confirmation.
// Probes of the series being compared (REST, gRPC, ...) are interleaved step
// by step, so drift on a noisy machine hits them alike. A probe the load
// generator itself could not deliver is void: it says "generator-bound at N
// calls/s", never the server's capacity; it is first repeated at the same
// rate (Settings.VoidRetries), as one stall of a shared machine is not the
// generator's limit, and the search then bisects up to that limit.
//
// The search is a pure state machine (Searcher): it decides the next rate
// and reads probe outcomes, and is tested without a clock or a network;
// Run drives it with a Prober.
package capacity

import (
	"fmt"
	"math"

	"github.com/meteorbench/meteorbench/internal/format"
)

// Phase is the part of the search a probe belongs to.
type Phase string

const (
	Grow     Phase = "grow"
	Bisect   Phase = "bisect"
	Confirm  Phase = "confirm"
	Boundary Phase = "boundary"
)

// Probe is one probe as the search kept it.
type Probe struct {
	Phase   Phase
	Outcome Outcome
	Verdict Verdict
	Why     string
}

// Settings shape a search.
type Settings struct {
	Start  float64 // first offered rate, calls/s (default 100)
	Growth float64 // factor between grow probes (default 2)
	// Leap is the factor between grow probes while the last one passed
	// with its percentile at most 1/LeapMargin of the bound and no error
	// (default Growth squared; at most Growth: no leap): the rates far
	// below the knee say little and took half of a 2-minute search (8 of
	// 19 probes from 100 to 12,800 small calls/s, p99 1-8 ms against 20
	// ms). The bracket a leap leaves costs one bisection more than a step.
	Leap      float64
	Precision float64 // stop bisecting when hi/lo - 1 <= Precision (default 0.05)
	Max       float64 // never offer more (default 1e6)
	// BoundaryProbes are the repeated probes at the found rate that give
	// it an interval (default 3).
	BoundaryProbes int
	// VoidRetries is how many times a void probe is repeated at the same
	// rate before the search ends generator-bound (default 2): on a shared
	// machine one stall of the generator voids a probe without the rate
	// being out of its reach. A negative value: no retry.
	VoidRetries int
	// StallRetries is how many times a probe during which the target
	// stalled is repeated at the same rate (default 2); stalled once more,
	// the series fails. A negative value: no retry.
	StallRetries int
	// FailRetries is how many times a failed probe of the grow or bisect
	// phase is repeated at the same rate before the failure counts
	// (default 1), unless it was Overloaded. A failure sets the top of
	// the bracket for good, and a hiccup of a shared machine can make it:
	// on the 2-core VM one 2 s probe at 800 small calls/s measured p99 36
	// ms, where the server sustains 30,000, and the search found 766;
	// near the knee a 2 s probe's p99 swung between 10 and 70 ms, and a
	// search found gRPC 16,600 where 26,560 then held p99 10.9 ms over 5
	// s. A pass that a retry lets through is still confirmed by the
	// longer probe. A negative value: no retry.
	FailRetries int
}

// Overloaded: a probe that failed with less than this share of its rate
// achieved failed by throughput, not by a percentile a hiccup can swing,
// and counts at once (Settings.FailRetries).
const Overloaded = 0.9

// LeapMargin: a grow probe whose percentile is at most 1/LeapMargin of
// the bound is far from the knee, and the next one leaps (Settings.Leap).
const LeapMargin = 4

func (s Settings) withDefaults() Settings {
	if s.Start <= 0 {
		s.Start = 100
	}
	if s.Growth <= 1 {
		s.Growth = 2
	}
	if s.Precision <= 0 {
		s.Precision = 0.05
	}
	if s.Max <= 0 {
		s.Max = 1e6
	}
	if s.BoundaryProbes <= 0 {
		s.BoundaryProbes = 3
	}
	if s.VoidRetries == 0 {
		s.VoidRetries = 2
	} else if s.VoidRetries < 0 {
		s.VoidRetries = 0
	}
	if s.StallRetries == 0 {
		s.StallRetries = 2
	} else if s.StallRetries < 0 {
		s.StallRetries = 0
	}
	if s.Leap == 0 {
		s.Leap = s.Growth * s.Growth
	}
	s.Leap = max(s.Leap, s.Growth)
	if s.FailRetries == 0 {
		s.FailRetries = 1
	} else if s.FailRetries < 0 {
		s.FailRetries = 0
	}
	return s
}

// Searcher is the search of one series. Next says the rate to probe next;
// Record takes its outcome. The zero value is not usable: use NewSearcher.
type Searcher struct {
	obj Objective
	set Settings

	phase  Phase
	lo, hi float64 // highest pass, lowest fail (0: none yet)
	// hiVoid: hi is a rate the generator could not deliver, not a
	// failure of the server's.
	hiVoid bool
	next   float64
	// genBound is set when a void probe ended the search: the rate the
	// load generator could not deliver.
	genBound  float64
	boundLeft int
	voids     int // consecutive void probes at the current rate
	stalls    int // consecutive probes during which the target stalled
	fails     int // consecutive failed probes at the current rate
	Probes    []Probe
	done      bool
	stopped   string // why the search ended before its end ("" when it ran out)
	failure   string // why the search failed (the target stalled every time)
	// minCPU is the least server CPU per call (µs) a probe of the series
	// measured, and cores the server's CPUs (0: unknown): together the
	// most the server's CPU can carry (aboveCPU).
	minCPU, cores float64
	// recheck says how the found rate failed its re-check after it was
	// confirmed ("": it did not): the search is then unstable.
	recheck string
}

// CPUSlack is how far above its cores a pass may put the server's CPU
// (rate × the least CPU per call measured) before it is void: CPU per call
// is read from a counter of the whole probe, warm-up edges included.
const CPUSlack = 0.1

// aboveCPU says why a passing probe at o's rate is void ("" when it is
// not): the rate times the least CPU per call the series measured is more
// than the server's cores. A short probe passed that way at a rate the
// server cannot carry: its backlog had no time to show (REST passed 1,600
// large calls/s of a payload in a 2 s probe, a rate one server core cannot
// encode).
func (s *Searcher) aboveCPU(o Outcome) string {
	if s.minCPU <= 0 || s.cores <= 0 {
		return ""
	}
	need := o.Offered * s.minCPU * 1e-6
	if need <= s.cores*(1+CPUSlack) {
		return ""
	}
	return fmt.Sprintf("passed above the server's CPU capacity: %s calls/s × %s µs a call (the least measured) = %s cores of its %s: too short a probe for its backlog to show",
		format.Rate(o.Offered), format.Number(s.minCPU), format.Number(need), format.Number(s.cores))
}

// NewSearcher starts a search.
func NewSearcher(obj Objective, set Settings) *Searcher {
	set = set.withDefaults()
	return &Searcher{obj: obj, set: set, phase: Grow, next: set.Start, boundLeft: set.BoundaryProbes}
}

// Done reports whether the search has ended.
func (s *Searcher) Done() bool { return s.done }

// Next is the rate to probe next and the phase it belongs to.
func (s *Searcher) Next() (rate float64, phase Phase) { return s.next, s.phase }

// Record takes the outcome of the probe Next asked for and decides the
// next step.
func (s *Searcher) Record(o Outcome) {
	v, why := s.obj.Judge(o)
	if o.ServerCPUUS > 0 && !o.Stalled {
		if s.minCPU == 0 || o.ServerCPUUS < s.minCPU {
			s.minCPU = o.ServerCPUUS
		}
		s.cores = o.ServerCores
	}
	overCPU := false
	if v == Pass {
		if w := s.aboveCPU(o); w != "" {
			overCPU, v, why = true, Void, w
		}
	}
	s.Probes = append(s.Probes, Probe{Phase: s.phase, Outcome: o, Verdict: v, Why: why})
	if overCPU {
		// Not the generator's limit, and no hiccup to retry: the rate is
		// beyond the server, as a failure that counts is.
		v = Fail
		s.voids, s.fails = 0, s.set.FailRetries
	}
	if o.Stalled {
		// Neither the server's failure nor the generator's limit: probe
		// the same rate again (same phase), a bounded number of times.
		if s.stalls++; s.stalls <= s.set.StallRetries {
			return
		}
		s.failure = fmt.Sprintf("failed: the target stalled in %d probes in a row at %s calls/s (last: %s)", s.stalls, format.Rate(o.Offered), o.StallWhy)
		s.finish(s.failure)
		return
	}
	s.stalls = 0
	if v == Void {
		// Probe the same rate again (same phase): one stall of a shared
		// machine is not the generator's limit.
		if s.voids++; s.voids <= s.set.VoidRetries {
			return
		}
		if s.phase == Boundary {
			// The rate is confirmed; a boundary probe the generator
			// could not deliver is left out, not the search's end.
			s.voids = 0
			if s.boundLeft--; s.boundLeft <= 0 {
				s.finishConfirmed()
			}
			return
		}
		// The generator could not offer this rate: what the server can
		// take above it is unknown. Keep the bracket found so far; with no
		// rate passed yet, look lower, below the generator's limit.
		s.genBound = o.Offered
		s.voids = 0
		if low := o.Offered / (s.set.Growth * s.set.Growth); s.lo == 0 && low >= 1 && s.phase == Grow {
			s.next = low
			return
		}
		if s.lo > 0 && (s.phase == Grow || s.phase == Bisect) && (s.hi == 0 || o.Offered < s.hi) {
			// Bisect up to the generator's limit: the lower bound it
			// gives is then within the precision.
			s.hi, s.hiVoid = o.Offered, true
			s.phase = Bisect
			s.bisectNext()
			return
		}
		if s.phase == Confirm {
			// The found rate, probed as long as a check, is out of the
			// generator's reach.
			s.dropBelow(o.Offered, true)
			return
		}
		s.finish("generator-bound")
		return
	}
	s.voids = 0
	rate := o.Offered
	if v == Fail && (s.phase == Grow || s.phase == Bisect) && o.Achieved >= Overloaded*o.Offered && s.fails < s.set.FailRetries {
		s.fails++
		return // the same rate again: the failure may be a hiccup
	}
	s.fails = 0 // a pass, or a failure that counts
	switch s.phase {
	case Grow:
		if v == Pass {
			s.lo = rate
			if rate >= s.set.Max {
				s.finish("reached the maximum rate")
				return
			}
			step := s.set.Growth
			if o.Errors == 0 && o.Latency*LeapMargin <= float64(s.obj.Bound.Microseconds()) {
				step = s.set.Leap
			}
			s.next = math.Min(rate*step, s.set.Max)
			if s.genBound > 0 && s.next >= s.genBound {
				// The generator could not offer it: bisect below.
				s.hi, s.hiVoid = s.genBound, true
				s.phase = Bisect
				s.bisectNext()
			}
			return
		}
		s.hi = rate
		s.phase = Bisect
		s.bisectNext()
	case Bisect:
		if v == Pass {
			s.lo = rate
		} else {
			s.hi, s.hiVoid = rate, false
		}
		s.bisectNext()
	case Confirm, Boundary:
		if v == Pass {
			if s.phase == Confirm {
				s.phase = Boundary
				s.next = s.lo
				s.boundLeft = s.set.BoundaryProbes
				return
			}
			if s.boundLeft--; s.boundLeft <= 0 {
				s.finishConfirmed()
			}
			return
		}
		if s.phase == Boundary {
			// Confirmed, then it failed its re-check after the other
			// series' probes: the rate does not hold, and no ratio is
			// drawn from it (Result.Unstable, with both measurements).
			s.recheck = s.recheckFailed(o, why)
			s.finishConfirmed()
			return
		}
		// The found rate did not hold in a probe as long as a user's
		// check: it is a failure now. Near the knee of the
		// latency curve one short probe passes by luck (small REST on the
		// 2-core machine: p99 23 ms in one 2 s probe at 13,400 calls/s,
		// 14-311 ms in 5 s runs at that rate): the found rate is one that
		// held in every long probe.
		s.dropBelow(rate, false)
	}
}

// recheckFailed says how the found rate, confirmed, failed its re-check o.
func (s *Searcher) recheckFailed(o Outcome, why string) string {
	held := ""
	for i := len(s.Probes) - 1; i >= 0; i-- {
		p := s.Probes[i]
		if p.Phase == Confirm && p.Verdict == Pass && p.Outcome.Offered == o.Offered {
			held = fmt.Sprintf("confirmation (achieved %s, p%g %s)", format.Rate(p.Outcome.Achieved), s.obj.Percentile, format.US(p.Outcome.Latency))
			break
		}
	}
	return fmt.Sprintf("%s calls/s held in its %s, then failed its re-check after the other series' probes (achieved %s, p%g %s: %s): the rate does not hold",
		format.Rate(o.Offered), held, format.Rate(o.Achieved), s.obj.Percentile, format.US(o.Latency), why)
}

// dropBelow makes a found rate that did not hold the top of the bracket
// (the generator's limit when void) and the best pass below it the
// bottom, to be bisected and confirmed in turn.
func (s *Searcher) dropBelow(rate float64, void bool) {
	s.hi, s.hiVoid = rate, void
	s.lo = s.bestPassBelow(rate)
	s.phase = Bisect
	s.bisectNext()
}

// bestPassBelow is the highest passing rate probed below rate (0: none).
func (s *Searcher) bestPassBelow(rate float64) float64 {
	best := 0.0
	for _, p := range s.Probes {
		if p.Verdict == Pass && p.Outcome.Offered < rate {
			best = math.Max(best, p.Outcome.Offered)
		}
	}
	return best
}

// bisectNext probes the geometric middle of the bracket, or confirms once
// the bracket is within the precision. With no passing rate yet, it looks
// further down.
func (s *Searcher) bisectNext() {
	if s.lo == 0 {
		s.next = s.hi / (s.set.Growth * s.set.Growth)
		if s.next < 1 {
			s.finish("fails at the lowest rate")
		}
		return
	}
	if s.hi/s.lo-1 <= s.set.Precision {
		if s.hiVoid {
			// Up to the generator's limit: the server sustains at least
			// lo, once confirmed; what it takes above is unknown.
			s.genBound = s.hi
		}
		s.phase = Confirm
		s.next = s.lo
		return
	}
	s.next = math.Sqrt(s.lo * s.hi)
}

// finishConfirmed ends a search whose found rate held: a capacity, or,
// when the top of the bracket is the generator's limit, a lower bound.
func (s *Searcher) finishConfirmed() {
	if s.hiVoid {
		s.finish("generator-bound")
		return
	}
	s.finish("")
}

func (s *Searcher) finish(why string) {
	s.done = true
	s.stopped = why
}

// Stop ends the search from outside (the time bound): the best bracket so
// far is the result, marked.
func (s *Searcher) Stop(why string) {
	if !s.done {
		s.finish(why)
	}
}

// Result is what a search found.
type Result struct {
	// Rate is the highest offered rate that passed (and held when
	// confirmed); 0 when none did.
	Rate float64
	// Lo and Hi bracket the capacity: the highest rate that passed and the
	// lowest that failed (0 when none failed).
	Lo, Hi float64
	// Held is how many of the boundary probes at Rate passed, of Boundary.
	Held, Boundary int
	// GeneratorBound is the rate the load generator could not deliver, when
	// that ended the search: the server's capacity is at least Rate and
	// unknown above.
	GeneratorBound float64
	// Complete is false when the search was stopped (time bound, generator
	// bound) before it confirmed a rate within the precision.
	Complete bool
	// Failure says why the search failed (the target stalled in every
	// retry of a probe); Rate is then 0: no rate is claimed.
	Failure string
	// Unstable says how the probes contradict each other (unstable).
	Unstable string
	// Note says how the search ended, for people.
	Note   string
	Probes []Probe
}

// Result summarises the search so far.
func (s *Searcher) Result() Result {
	r := Result{Lo: s.lo, Hi: s.hi, Rate: s.lo, GeneratorBound: s.genBound, Probes: s.Probes}
	switch {
	case s.hiVoid:
		r.Hi = 0 // no rate failed: the top is the generator's
	case s.hi > 0 && s.stopped != "generator-bound":
		r.GeneratorBound = 0 // a failure of the server's brackets it
	}
	for _, p := range s.Probes {
		// The boundary probes at the found rate; a void one was repeated.
		if p.Phase == Boundary && p.Outcome.Offered == s.lo && p.Verdict != Void {
			r.Boundary++
			if p.Verdict == Pass {
				r.Held++
			}
		}
	}
	r.Complete = s.done && s.stopped == ""
	r.Unstable = unstable(s.Probes)
	if s.recheck != "" {
		r.Unstable = s.recheck
	}
	switch {
	case s.failure != "":
		r.Failure, r.Note = s.failure, s.failure
		r.Rate, r.GeneratorBound = 0, 0
		r.Held, r.Boundary = 0, 0
	case r.GeneratorBound > 0 && s.lo == 0:
		r.Note = fmt.Sprintf("generator-bound at %s calls/s: the load generator could not deliver it, and no lower rate passed", format.Rate(s.genBound))
	case r.GeneratorBound > 0:
		r.Note = fmt.Sprintf("generator-bound at %s calls/s: the load generator could not deliver more; the server sustains at least %s", format.Rate(s.genBound), format.Rate(s.lo))
		if s.stopped != "generator-bound" {
			// Stopped (the time bound) before the lower bound was confirmed.
			r.Note += " in short probes, unconfirmed: " + s.stopped
		}
	case s.stopped != "":
		r.Note = s.stopped
	case s.recheck != "":
		r.Note = fmt.Sprintf("held in %d of %d re-checks: the found rate does not hold (unstable)", r.Held, r.Boundary)
	case r.Boundary < s.set.BoundaryProbes && s.done:
		r.Note = fmt.Sprintf("held in %d of %d boundary probes (%d void: the generator could not deliver them)", r.Held, r.Boundary, s.set.BoundaryProbes-r.Boundary)
	case r.Boundary > 0 && r.Held < r.Boundary:
		r.Note = fmt.Sprintf("held in %d of %d boundary probes", r.Held, r.Boundary)
	}
	return r
}

// UnstableMargin: a failed probe more than this share below a passed one
// makes a search unstable. Near the knee a short probe's tail swings, and
// the search brackets it within its precision (5%); a failure 10% and
// more below a pass is the target or the machine that changed, as on the
// 2-core VM, where one search passed 30,444 small REST calls/s and, two
// minutes later, achieved 23,800 of 25,600: it bisected down to 6,400 and
// called that the capacity.
const UnstableMargin = 0.1

// unstable says how probes contradict each other (""; they do not): the
// lowest failure that lies UnstableMargin below the highest pass.
func unstable(probes []Probe) string {
	var pass, fail *Probe
	for i := range probes {
		p := &probes[i]
		switch {
		case p.Verdict == Pass && (pass == nil || p.Outcome.Offered > pass.Outcome.Offered):
			pass = p
		case p.Verdict == Fail && (fail == nil || p.Outcome.Offered < fail.Outcome.Offered):
			fail = p
		}
	}
	if pass == nil || fail == nil || fail.Outcome.Offered >= (1-UnstableMargin)*pass.Outcome.Offered {
		return ""
	}
	return fmt.Sprintf("%s calls/s failed (%s) where %s passed: the target or the machine changed speed during the search",
		format.Rate(fail.Outcome.Offered), fail.Why, format.Rate(pass.Outcome.Offered))
}
