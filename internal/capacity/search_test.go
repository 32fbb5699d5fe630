package capacity

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

var p99at50ms = Objective{Percentile: 99, Bound: 50 * time.Millisecond, MaxErrors: 0.001}

// model is a server of capacity c calls/s: up to it p99 is 2 ms; above it
// calls queue and p99 is a second; the generator can offer at most genMax
// (0: no limit).
func model(c, genMax float64) func(rate float64) Outcome {
	return func(rate float64) Outcome {
		o := Outcome{Offered: rate, Achieved: rate, Calls: int64(rate * 2), P50: 1000, Latency: 2000}
		if genMax > 0 && rate > genMax {
			o.Void, o.VoidWhy = true, "the load generator woke late"
			o.Achieved = genMax
		}
		if rate > c {
			o.Latency = 1e6 // queueing
		}
		return o
	}
}

// stepping grows by Growth alone (no leap), for the tests that count
// probes from 100 calls/s by doubling.
var stepping = Settings{Start: 100, Leap: 1}

func drive(t *testing.T, s *Searcher, m func(float64) Outcome) Result {
	t.Helper()
	for i := 0; !s.Done(); i++ {
		if i > 100 {
			t.Fatal("search does not end")
		}
		rate, _ := s.Next()
		s.Record(m(rate))
	}
	return s.Result()
}

// driveAltered searches model m from 100 calls/s, altering the outcome of
// every probe of phase ph above rate.
func driveAltered(t *testing.T, m func(float64) Outcome, ph Phase, above float64, alter func(*Outcome)) Result {
	t.Helper()
	s := NewSearcher(p99at50ms, Settings{Start: 100})
	return drive(t, s, func(rate float64) Outcome {
		o := m(rate)
		if _, p := s.Next(); p == ph && rate > above {
			alter(&o)
		}
		return o
	})
}

// The search finds a known capacity within its precision, confirms it and
// repeats probes at the boundary.
func TestSearchFindsCapacity(t *testing.T) {
	for _, c := range []float64{37, 950, 9800, 123456} {
		s := NewSearcher(p99at50ms, Settings{Start: 100})
		r := drive(t, s, model(c, 0))
		if !r.Complete || r.Rate > c || r.Hi <= c || r.Hi/r.Lo-1 > 0.05 {
			t.Errorf("capacity %v: found %v [%v, %v], complete %v (%s)", c, r.Rate, r.Lo, r.Hi, r.Complete, r.Note)
		}
		if r.Rate < c/1.05 {
			t.Errorf("capacity %v: found %v, more than 5%% below", c, r.Rate)
		}
		if r.Boundary != 3 || r.Held != 3 {
			t.Errorf("capacity %v: %d of %d boundary probes held", c, r.Held, r.Boundary)
		}
		var confirm, grow int
		for _, p := range r.Probes {
			switch p.Phase {
			case Confirm:
				confirm++
			case Grow:
				grow++
			}
		}
		if confirm != 1 || grow == 0 {
			t.Errorf("capacity %v: %d confirm and %d grow probes", c, confirm, grow)
		}
	}
}

// A probe the generator could not deliver is void: the search bisects up
// to the generator's limit and ends with the server's capacity reported as
// at least the highest passing rate, within the precision of that limit.
func TestSearchGeneratorBound(t *testing.T) {
	s := NewSearcher(p99at50ms, Settings{Start: 100})
	r := drive(t, s, model(1e6, 3000))
	if r.GeneratorBound <= 3000 || r.GeneratorBound/r.Rate-1 > 0.05 || r.Rate > 3000 || r.Hi != 0 || r.Complete {
		t.Fatalf("result %+v", r)
	}
	// The lower bound is confirmed like a capacity: a confirmation and
	// the boundary probes at it, after the last void probe.
	var tail []Phase
	for _, p := range r.Probes[len(r.Probes)-4:] {
		tail = append(tail, p.Phase)
	}
	if fmt.Sprint(tail) != "[confirm boundary boundary boundary]" || r.Held != 3 {
		t.Errorf("last probes %v, %d of %d boundary probes held", tail, r.Held, r.Boundary)
	}
	if p := r.Probes[len(r.Probes)-5]; p.Verdict != Void || p.Why != "the load generator woke late" {
		t.Errorf("last probe before the confirmation %+v", p)
	}
	if want := "generator-bound at 3,064 calls/s: the load generator could not deliver more; the server sustains at least 2,934"; r.Note != want {
		t.Errorf("note %q", r.Note)
	}
	// Each void rate was tried three times (two retries) before it counted.
	voids := map[float64]int{}
	for _, p := range r.Probes {
		if p.Verdict == Void {
			voids[p.Outcome.Offered]++
		}
	}
	for rate, n := range voids {
		if n != 3 || rate <= 3000 {
			t.Errorf("%d void probes at %v, want 3 (two retries), above 3000", n, rate)
		}
	}
	// A failure of the server's below the generator's limit brackets the
	// capacity: not generator-bound.
	s = NewSearcher(p99at50ms, Settings{Start: 100})
	if r := drive(t, s, model(2500, 3000)); r.GeneratorBound != 0 || !r.Complete || r.Hi <= 2500 || r.Rate > 2500 {
		t.Errorf("server-bound below the generator's limit: %+v", r)
	}
}

// One void probe (a stall of a shared machine) is retried at the same rate
// in the same phase; the search goes on when the retry is valid.
func TestSearchVoidRetried(t *testing.T) {
	s := NewSearcher(p99at50ms, stepping)
	m := model(950, 0)
	stalled := false
	r := drive(t, s, func(rate float64) Outcome {
		o := m(rate)
		if rate == 400 && !stalled {
			stalled = true
			o.Void, o.VoidWhy = true, "stall"
		}
		return o
	})
	if !r.Complete || r.GeneratorBound != 0 || r.Rate > 950 || r.Rate < 950/1.05 {
		t.Fatalf("result %+v", r)
	}
	if p := r.Probes[2]; p.Verdict != Void || p.Outcome.Offered != 400 || r.Probes[3].Outcome.Offered != 400 || r.Probes[3].Phase != Grow {
		t.Errorf("probes 3 and 4: %+v, %+v", p, r.Probes[3])
	}
	// No retry when told so: 10 probes to the bracket, 4 to confirm it.
	s = NewSearcher(p99at50ms, Settings{Start: 100, Leap: 1, VoidRetries: -1})
	if r := drive(t, s, model(1e6, 3000)); len(r.Probes) != 14 || r.GeneratorBound/r.Rate-1 > 0.05 {
		t.Errorf("without retries: %d probes, %+v", len(r.Probes), r)
	}
}

// Errors and a short achieved rate fail a probe like latency does.
func TestJudge(t *testing.T) {
	ok := Outcome{Offered: 100, Achieved: 100, Calls: 1000, Latency: 49999}
	for _, tc := range []struct {
		o    Outcome
		want Verdict
	}{
		{ok, Pass},
		{func() Outcome { o := ok; o.Latency = 50001; return o }(), Fail},
		{func() Outcome { o := ok; o.Errors = 2; return o }(), Fail}, // 0.2% > 0.1%
		{func() Outcome { o := ok; o.Errors = 1; o.Calls = 1999; return o }(), Pass},
		{func() Outcome { o := ok; o.Achieved = 98.9; return o }(), Fail},
		{func() Outcome { o := ok; o.Calls = 0; return o }(), Fail},
		{func() Outcome { o := ok; o.StopEarly = "target down"; return o }(), Fail},
		{func() Outcome { o := ok; o.Void = true; return o }(), Void},
	} {
		if v, why := p99at50ms.Judge(tc.o); v != tc.want {
			t.Errorf("%+v: %s (%s), want %s", tc.o, v, why, tc.want)
		}
	}
}

// A server that fails even at the start rate is searched downwards.
func TestSearchBelowStart(t *testing.T) {
	r := drive(t, NewSearcher(p99at50ms, Settings{Start: 1000}), model(30, 0))
	if !r.Complete || r.Rate > 30 || r.Hi <= 30 || r.Rate < 30/1.05 {
		t.Errorf("result %v [%v, %v] %s", r.Rate, r.Lo, r.Hi, r.Note)
	}
}

// Run interleaves the series step by step and stops them all at the time
// bound, each with its best bracket, marked.
func TestRunInterleavesAndStops(t *testing.T) {
	a, b := NewSearcher(p99at50ms, Settings{}), NewSearcher(p99at50ms, Settings{})
	models := []func(float64) Outcome{model(5000, 0), model(800, 0)}
	var order []int
	err := Run(context.Background(), []*Searcher{a, b}, time.Hour, 0, func(_ context.Context, i int, rate float64) (Outcome, error) {
		order = append(order, i)
		return models[i](rate), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		if order[i] != i%2 {
			t.Fatalf("probe order %v, want 0,1,0,1,... while both search", order)
		}
	}
	ra, rb := a.Result(), b.Result()
	if !ra.Complete || !rb.Complete || ra.Rate > 5000 || rb.Rate > 800 {
		t.Errorf("results %v, %v", ra.Rate, rb.Rate)
	}

	// A time bound already passed after the first probe: stopped, marked.
	c := NewSearcher(p99at50ms, Settings{})
	calls := 0
	Run(context.Background(), []*Searcher{c}, time.Nanosecond, 0, func(_ context.Context, _ int, rate float64) (Outcome, error) {
		calls++
		return model(5000, 0)(rate), nil
	})
	if r := c.Result(); r.Complete || calls > 1 || r.Note == "" {
		t.Errorf("stopped search: %d probes, %+v", calls, r)
	}

	// A prober error stops everything and is returned.
	d := NewSearcher(p99at50ms, Settings{})
	boom := errors.New("target down")
	if err := Run(context.Background(), []*Searcher{d}, time.Hour, 0, func(context.Context, int, float64) (Outcome, error) {
		return Outcome{}, boom
	}); !errors.Is(err, boom) || !d.Done() {
		t.Errorf("err %v, done %v", err, d.Done())
	}
}

// Void from the start rate: the search looks lower, below the generator's
// limit, grows to it and ends generator-bound just under it.
func TestSearchVoidAtStart(t *testing.T) {
	s := NewSearcher(p99at50ms, Settings{Start: 100})
	r := drive(t, s, model(1e6, 60))
	if r.GeneratorBound <= 60 || r.GeneratorBound > 100 || r.Rate > 60 || r.Rate < 60/1.05 || r.Complete {
		t.Fatalf("result %+v", r)
	}
	var rates []float64
	for _, p := range r.Probes[:5] {
		rates = append(rates, p.Outcome.Offered)
	}
	if want := []float64{100, 100, 100, 25, 50}; fmt.Sprint(rates) != fmt.Sprint(want) {
		t.Errorf("rates %v, want %v", rates, want)
	}
	// Nothing passes below either: no capacity, said so.
	s = NewSearcher(p99at50ms, Settings{Start: 100})
	r = drive(t, s, model(1e6, 0.5))
	if r.Rate != 0 || r.GeneratorBound == 0 || !strings.Contains(r.Note, "no lower rate passed") {
		t.Errorf("result %+v", r)
	}
}

// A boundary probe void on every retry is left out: the confirmed rate
// stands, the note says how many boundary probes were void.
func TestSearchVoidAtBoundary(t *testing.T) {
	s := NewSearcher(p99at50ms, Settings{Start: 100})
	m := model(950, 0)
	r := drive(t, s, func(rate float64) Outcome {
		o := m(rate)
		if _, ph := s.Next(); ph == Boundary && len(s.Probes) < 25 {
			o.Void, o.VoidWhy = true, "stall"
		}
		return o
	})
	if !r.Complete || r.GeneratorBound != 0 || r.Rate < 950/1.05 || r.Rate > 950 {
		t.Fatalf("result %+v", r)
	}
	if r.Boundary >= 3 || !strings.Contains(r.Note, "void: the generator could not deliver them") {
		t.Errorf("boundary %d, note %q", r.Boundary, r.Note)
	}
}

// A rate that held in its confirmation and then fails its re-check (a
// boundary probe, after the other series' probes) does not hold: the
// search ends unstable, saying both measurements, and no ratio is drawn
// from it (results: found() leaves unstable series out).
func TestSearchRecheckFailureUnstable(t *testing.T) {
	r := driveAltered(t, model(950, 0), Boundary, 880, func(o *Outcome) {
		o.Latency = 80000 // the re-check meets the tail
		o.Achieved = 870
	})
	if !r.Complete || r.Rate < 880/1.1 || r.Rate > 950 {
		t.Fatalf("found %v [%v, %v] (%s)", r.Rate, r.Lo, r.Hi, r.Note)
	}
	for _, want := range []string{"held in its confirmation (achieved", "then failed its re-check after the other series' probes (achieved 870, p99 80.0 ms", "the rate does not hold"} {
		if !strings.Contains(r.Unstable, want) {
			t.Errorf("unstable lacks %q: %q", want, r.Unstable)
		}
	}
	failed := 0
	for _, p := range r.Probes {
		if p.Phase == Boundary && p.Verdict == Fail {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d boundary probes failed, want the one that ended the search", failed)
	}
}

// A pass at a rate the server's CPU cannot carry (the rate times the
// least CPU per call the series measured is above its cores) is void,
// and the top of the bracket as a failure is: the search ends below the
// server's CPU capacity, though every probe "passed".
func TestSearchPassAboveCPUVoid(t *testing.T) {
	s := NewSearcher(p99at50ms, Settings{Start: 100})
	for !s.Done() {
		rate, _ := s.Next()
		// Every probe passes, 1 ms of CPU a call on 1 core: 1,000 calls/s
		// at most.
		s.Record(Outcome{Offered: rate, Achieved: rate, Latency: 1000, Calls: int64(rate * 2), ServerCPUUS: 1000, ServerCores: 1})
	}
	r := s.Result()
	if r.Rate > 1000*(1+CPUSlack) || r.Rate < 1000/1.05/1.2 || r.Hi == 0 {
		t.Fatalf("found %v [%v, %v] (%s), want at most the CPU's %v", r.Rate, r.Lo, r.Hi, r.Note, 1000*(1+CPUSlack))
	}
	void := 0
	for _, p := range r.Probes {
		if p.Verdict == Void {
			void++
			if !strings.Contains(p.Why, "above the server's CPU capacity") || p.Outcome.Offered <= 1000*(1+CPUSlack) {
				t.Errorf("void at %v: %s", p.Outcome.Offered, p.Why)
			}
		}
	}
	if void == 0 {
		t.Error("no probe was void: the test did not reach the case")
	}
}

// A search stopped by its time bound after a void probe but before it
// confirmed the lower bound says that the bound is unconfirmed.
func TestSearchGeneratorBoundStopped(t *testing.T) {
	s := NewSearcher(p99at50ms, Settings{Start: 100})
	m := model(1e6, 3000)
	for !s.Done() {
		if _, ph := s.Next(); ph == Confirm {
			s.Stop("stopped by --max-time 2m0s: best bracket so far")
			break
		}
		rate, _ := s.Next()
		s.Record(m(rate))
	}
	r := s.Result()
	if r.Complete || r.GeneratorBound == 0 {
		t.Fatalf("result %+v", r)
	}
	if want := "the server sustains at least 2,934 in short probes, unconfirmed: stopped by --max-time 2m0s"; !strings.Contains(r.Note, want) {
		t.Errorf("note %q, want it to contain %q", r.Note, want)
	}
}

// A confirmation the generator cannot deliver (void on every retry) drops
// the lower bound to the best pass below it, which is then confirmed: a
// generator-bound result claims only a rate that held in long probes.
func TestSearchVoidConfirmation(t *testing.T) {
	r := driveAltered(t, model(1e6, 3000), Confirm, 2800, func(o *Outcome) {
		o.Void, o.VoidWhy = true, "all 1 workers were busy"
	})
	if r.GeneratorBound == 0 || r.Rate > 2800 || r.Rate >= r.GeneratorBound || r.Held != 3 {
		t.Fatalf("found %v, generator-bound at %v, %d of %d boundary probes held (%s)", r.Rate, r.GeneratorBound, r.Held, r.Boundary, r.Note)
	}
}

// A probe during which the target stalled is void whatever its figures
// (here it would pass), repeated at the same rate in the same phase, and
// the search goes on as if the stall had not been: the stalled probe never
// sets the capacity.
func TestSearchStallRetried(t *testing.T) {
	s := NewSearcher(p99at50ms, stepping)
	m := model(950, 0)
	stalled := 0
	r := drive(t, s, func(rate float64) Outcome {
		o := m(rate)
		if rate == 400 && stalled < 2 {
			stalled++
			o.Latency = 5e6 // the stall's calls: an overload's figures
			o.Stalled, o.StallWhy = true, "3 calls still running at the probe's hard end (abandoned)"
		}
		return o
	})
	if !r.Complete || r.Failure != "" || r.Rate > 950 || r.Rate < 950/1.05 {
		t.Fatalf("result %+v", r)
	}
	for i, want := range []Verdict{Void, Void, Pass} {
		p := r.Probes[2+i]
		if p.Verdict != want || p.Outcome.Offered != 400 || p.Phase != Grow {
			t.Errorf("probe %d: %s %s at %v (%s), want %s at 400", 3+i, p.Phase, p.Verdict, p.Outcome.Offered, p.Why, want)
		}
	}
	if why := r.Probes[2].Why; why != "the target stalled: 3 calls still running at the probe's hard end (abandoned)" {
		t.Errorf("why %q", why)
	}
	// A stall is not the generator's: no void retries used up, no bound.
	if r.GeneratorBound != 0 {
		t.Errorf("generator-bound at %v after a stall", r.GeneratorBound)
	}
}

// A target that stalls in every retry of a probe fails the series: no
// rate claimed, the failure said plainly.
func TestSearchStallFails(t *testing.T) {
	s := NewSearcher(p99at50ms, stepping)
	m := model(950, 0)
	r := drive(t, s, func(rate float64) Outcome {
		o := m(rate)
		if rate >= 400 {
			o.Stalled, o.StallWhy = true, "12 calls timed out (--timeout 10s)"
		}
		return o
	})
	if r.Rate != 0 || r.Complete || r.GeneratorBound != 0 || len(r.Probes) != 5 {
		t.Fatalf("result %+v", r)
	}
	want := "failed: the target stalled in 3 probes in a row at 400 calls/s (last: 12 calls timed out (--timeout 10s))"
	if r.Failure != want || r.Note != want {
		t.Errorf("failure %q, note %q, want %q", r.Failure, r.Note, want)
	}
	// No retry when told so.
	s = NewSearcher(p99at50ms, Settings{Start: 100, Leap: 1, StallRetries: -1})
	if r := drive(t, s, func(rate float64) Outcome { o := m(rate); o.Stalled = true; return o }); len(r.Probes) != 1 || r.Failure == "" {
		t.Errorf("without retries: %d probes, %+v", len(r.Probes), r)
	}
	// Stalls at different moments, each followed by a valid probe, are
	// each retried: the count is of stalls in a row.
	s = NewSearcher(p99at50ms, stepping)
	n := 0
	r = drive(t, s, func(rate float64) Outcome {
		o := m(rate)
		if n++; n%3 == 1 {
			o.Stalled = true
		}
		return o
	})
	if r.Failure != "" || !r.Complete {
		t.Errorf("one stall in three probes: %+v", r)
	}
}

// One failed grow probe, a hiccup at 200 calls/s on a server of 950, is
// probed again at the same rate before it ends the growth: the search
// still finds 950. Told not to retry, it trusts the hiccup and ends below
// A failure of the grow or bisect phase counts once it repeats at the same
// rate: one hiccup of a shared machine neither ends the growth far below
// the capacity nor sets the top of the bracket.
func TestSearchFailureRetried(t *testing.T) {
	for _, ph := range []Phase{Grow, Bisect} {
		hiccup := func(s *Searcher) func(float64) Outcome {
			m, done := model(950, 0), false
			return func(rate float64) Outcome {
				o := m(rate)
				if _, p := s.Next(); p == ph && rate > 100 && rate < 950 && !done {
					done = true
					o.Latency = 72e3 // 72 ms, in µs: over the objective
				}
				return o
			}
		}
		s := NewSearcher(p99at50ms, Settings{Start: 100})
		r := drive(t, s, hiccup(s))
		if !r.Complete || r.Rate > 950 || r.Rate < 950/1.05 {
			t.Fatalf("%s hiccup, with a retry: %+v", ph, r)
		}
		retried := false
		for i, p := range r.Probes[1:] {
			if q := r.Probes[i]; q.Verdict == Fail && q.Phase == ph && p.Phase == ph && p.Outcome.Offered == q.Outcome.Offered && p.Verdict == Pass {
				retried = true
			}
		}
		if !retried {
			t.Errorf("%s hiccup: no failure retried at its rate: %+v", ph, r.Probes)
		}
		s = NewSearcher(p99at50ms, Settings{Start: 100, FailRetries: -1})
		if r = drive(t, s, hiccup(s)); r.Rate >= 950/1.05 {
			t.Errorf("%s hiccup, without retries: found %v, want below the capacity's precision", ph, r.Rate)
		}
	}
}

// Far below the objective the growth leaps (Settings.Leap); near it, it
// steps (Settings.Growth).
func TestSearchLeapsFarFromTheBound(t *testing.T) {
	near := func(rate float64) Outcome {
		o := model(5000, 0)(rate)
		if rate >= 1600 && rate <= 5000 {
			o.Latency = 20e3 // 20 ms: over a quarter of the 50 ms bound
		}
		return o
	}
	r := drive(t, NewSearcher(p99at50ms, Settings{Start: 100}), near)
	var grow []float64
	for _, p := range r.Probes {
		if p.Phase == Grow {
			grow = append(grow, p.Outcome.Offered)
		}
	}
	if want := []float64{100, 400, 1600, 3200, 6400, 6400}; fmt.Sprint(grow) != fmt.Sprint(want) {
		t.Errorf("grow probes %v, want %v", grow, want)
	}
	if !r.Complete || r.Rate > 5000 || r.Rate < 5000/1.05 {
		t.Errorf("found %+v", r)
	}
}

// A failure that counts resets the retries: after a failure retried and
// then overloaded (counted at once), the next rate's hiccup is retried too.
func TestSearchRetryAfterOverload(t *testing.T) {
	m := model(950, 0)
	seen := map[float64]int{}
	r := drive(t, NewSearcher(p99at50ms, Settings{Start: 100}), func(rate float64) Outcome {
		o := m(rate)
		seen[rate]++
		switch {
		case rate == 1600 && seen[rate] == 2:
			o.Achieved = 800 // overloaded: counts at once
		case rate == 800 && seen[rate] == 1:
			o.Latency = 72e3 // a hiccup
		}
		return o
	})
	var got []string
	for _, p := range r.Probes[:6] {
		got = append(got, fmt.Sprintf("%s %v %s", p.Phase, p.Outcome.Offered, p.Verdict))
	}
	want := []string{"grow 100 pass", "grow 400 pass", "grow 1600 fail", "grow 1600 fail", "bisect 800 fail", "bisect 800 pass"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("probes %q, want %q", got, want)
	}
	if !r.Complete || r.Rate > 950 || r.Rate < 950/1.05 {
		t.Errorf("found %+v", r)
	}
}

// A target that slows down during the search makes it unstable: a rate
// fails well below one that passed, and the result says so; a steady
// target's search, near-knee noise and all, is not.
func TestSearchUnstable(t *testing.T) {
	probes := 0
	slows := func(rate float64) Outcome {
		probes++
		c := 950.0
		if probes > 6 {
			c = 600 // the machine slowed
		}
		return model(c, 0)(rate)
	}
	r := drive(t, NewSearcher(p99at50ms, Settings{Start: 100}), slows)
	if r.Unstable == "" || !strings.Contains(r.Unstable, "passed: the target or the machine changed speed") {
		t.Errorf("slowed target: unstable %q (%+v)", r.Unstable, r.Probes)
	}
	if r = drive(t, NewSearcher(p99at50ms, Settings{Start: 100}), model(950, 0)); r.Unstable != "" {
		t.Errorf("steady target: unstable %q", r.Unstable)
	}
	// Failures within the margin below a pass are near-knee noise.
	hiccups := 0
	noisy := func(rate float64) Outcome {
		o := model(950, 0)(rate)
		if rate > 950*(1-UnstableMargin/2) && rate <= 950 && hiccups < 2 {
			hiccups++
			o.Latency = 72e3 // counted: failed twice at the rate
		}
		return o
	}
	r = drive(t, NewSearcher(p99at50ms, Settings{Start: 100}), noisy)
	if hiccups != 2 || r.Unstable != "" {
		t.Errorf("noise near the knee (%d hiccups): unstable %q", hiccups, r.Unstable)
	}
}

// A confirmation lasts --confirm-probe, or long enough to fill its
// workers ConfirmFills times, within MaxConfirmLength.
func TestConfirmLength(t *testing.T) {
	for _, tc := range []struct {
		d       time.Duration
		rate    float64
		workers int
		want    time.Duration
	}{
		{5 * time.Second, 27917, 1024, 5 * time.Second},   // 51,200 calls: under 2 s of the rate
		{5 * time.Second, 1000, 200, 10 * time.Second},    // 10,000 calls at 1,000/s
		{5 * time.Second, 10, 8, 30 * time.Second},        // 400 calls at 10/s: bounded
		{2 * time.Second, 100000, 1024, 2 * time.Second},  // plenty
		{time.Second, 4000, 100, 1300 * time.Millisecond}, // 5,000 calls at 4,000/s, rounded
		{5 * time.Second, 0, 8, 5 * time.Second},          // no rate: as given
	} {
		if got := ConfirmLength(tc.d, tc.rate, tc.workers); got != tc.want {
			t.Errorf("ConfirmLength(%v, %v, %d) = %v, want %v", tc.d, tc.rate, tc.workers, got, tc.want)
		}
	}
}
