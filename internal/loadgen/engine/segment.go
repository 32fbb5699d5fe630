package engine

import (
	"fmt"

	"github.com/meteorbench/meteorbench/internal/results"
)

// Segment arithmetic: how `run --segment i/N` splits a cell so that N
// instances together make the load one instance running the whole plan
// would (k6's execution segments, with equal segments).
//
//   - Closed-loop workers are split by share: instance i gets
//     floor(i·x/N) − floor((i−1)·x/N). The shares sum to x, differ by at
//     most one, and depend on nothing but i, N and x. With x < N some
//     instances get 0.
//   - Closed-loop iterations follow the workers: with W(i) = floor(i·c/N)
//     the workers of instances 1..i (c the cell's workers), instance i gets
//     floor(W(i)·I/c) − floor(W(i−1)·I/c) of the I iterations, its workers'
//     share of them. They sum to I, and an instance without a worker has
//     no iteration left for nobody to run.
//   - The open-loop schedule is split call by call: instance i makes calls
//     i−1, i−1+N, i−1+2N, ... of the one schedule at --rate, at the same
//     intended times. Each offers rate/N, its schedule offset by
//     (i−1)/rate from the first instance's, so the N schedules interleave
//     rather than coincide, and together they are exactly the one
//     schedule. An --iterations bound (iterations × batch calls) is split
//     the same way: instance i gets the calls of the schedule below the
//     bound that are its own (strided).
//   - Open-loop workers are split by share too, but an instance keeps at
//     least one: it has calls to send whatever the worker count.
//
// A cell whose share is nothing (closed loop: 0 workers or 0 iterations;
// open loop: 0 calls) is not measured by that instance: its cell has no
// calls, Share.Empty set and a warning saying why. That is valid, not a
// failure: the other instances measured the cell.

// share is segment s's part of x: floor(i·x/N) − floor((i−1)·x/N); x
// itself for the whole plan.
func share(s results.Segment, x int) int {
	if s.Whole() {
		return x
	}
	i, n := int64(s.Index), int64(s.Count)
	return int(i*int64(x)/n - (i-1)*int64(x)/n)
}

// iterationShare is segment s's part of iterations closed-loop
// iterations run by workers workers: its workers' part.
func iterationShare(s results.Segment, workers, iterations int) int {
	if s.Whole() || workers == 0 {
		return iterations
	}
	w := func(i int) int64 { return int64(i) * int64(workers) / int64(s.Count) }
	it, c := int64(iterations), int64(workers)
	return int(w(s.Index)*it/c - w(s.Index-1)*it/c)
}

// strided is how many of calls 0..x−1 are segment s's: those numbered
// i−1 mod N.
func strided(s results.Segment, x int) int {
	if s.Whole() {
		return x
	}
	first := s.Index - 1
	if x <= first {
		return 0
	}
	return (x-first-1)/s.Count + 1
}

// Share is what this instance runs of a cell.
type Share struct {
	Workers int
	// MaxWorkers, when > 0, is the most workers an open loop that sizes
	// itself may grow to (Config.MaxWorkers' share).
	MaxWorkers int
	// Iterations: closed loop, batches; open loop, calls; 0: no count bound.
	Iterations int
	Sched      Schedule
	Empty      bool
	Why        string // when empty: what there was too little of
}

// ShareOf computes segment s's share of the cell k, bounded by iterations
// batches (0: none), whose open loop may grow to maxWorkers (0: fixed).
func ShareOf(s results.Segment, maxWorkers int, k results.CellKey, iterations int) Share {
	spec := k
	sh := Share{Workers: share(s, spec.Concurrency)}
	if rate := spec.RateRequested; rate > 0 {
		sh.Sched = Schedule{Rate: rate}
		if !s.Whole() {
			sh.Sched.Stride, sh.Sched.Phase = uint64(s.Count), uint64(s.Index-1)
		}
		sh.Workers = max(sh.Workers, 1)
		if maxWorkers > 0 {
			sh.MaxWorkers = max(share(s, maxWorkers), sh.Workers)
		}
		if iterations > 0 {
			total := iterations * spec.Batch
			if sh.Iterations = strided(s, total); sh.Iterations == 0 {
				sh.Empty, sh.Why = true, fmt.Sprintf("%d calls (%d iterations of %d)", total, iterations, spec.Batch)
			}
		}
		return sh
	}
	if iterations > 0 {
		sh.Iterations = iterationShare(s, spec.Concurrency, iterations)
		if sh.Iterations == 0 {
			sh.Empty, sh.Why = true, fmt.Sprintf("%d iterations", iterations)
		}
	}
	if sh.Workers == 0 {
		sh.Empty, sh.Why = true, fmt.Sprintf("%d workers", spec.Concurrency)
	}
	return sh
}

// Result is the share as the cell records it; nil for the whole plan.
func (sh Share) Result(s results.Segment) *results.Share {
	if s.Whole() {
		return nil
	}
	out := &results.Share{Workers: sh.Workers, Iterations: sh.Iterations, Empty: sh.Empty}
	if sh.Empty {
		out.Workers = 0
	}
	if sh.Sched.Rate > 0 {
		out.Rate = sh.Sched.Rate / float64(max(sh.Sched.Stride, 1))
	}
	return out
}
