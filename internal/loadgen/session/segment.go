package session

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
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

// cellShare is what this instance runs of a cell.
type cellShare struct {
	workers int
	// maxWorkers, when > 0, is the most workers an open loop that sizes
	// itself may grow to (Config.MaxWorkers' share).
	maxWorkers int
	// iterations: closed loop, batches; open loop, calls; 0: no count bound.
	iterations int
	sched      engine.Schedule
	empty      bool
	why        string // when empty: what there was too little of
}

// shareOf computes the instance's share of the cell spec, measured within
// b, under c's segment.
func shareOf(c plan.Config, spec plan.Spec, b plan.Bounds) cellShare {
	s := c.Segment
	sh := cellShare{workers: share(s, spec.Concurrency)}
	if rate := spec.RateRequested; rate > 0 {
		sh.sched = engine.Schedule{Rate: rate}
		if !s.Whole() {
			sh.sched.Stride, sh.sched.Phase = uint64(s.Count), uint64(s.Index-1)
		}
		sh.workers = max(sh.workers, 1)
		if c.MaxWorkers > 0 {
			sh.maxWorkers = max(share(s, c.MaxWorkers), sh.workers)
		}
		if b.Iterations > 0 {
			total := b.Iterations * spec.Batch
			if sh.iterations = strided(s, total); sh.iterations == 0 {
				sh.empty, sh.why = true, fmt.Sprintf("%d calls (%d iterations of %d)", total, b.Iterations, spec.Batch)
			}
		}
		return sh
	}
	if b.Iterations > 0 {
		sh.iterations = iterationShare(s, spec.Concurrency, b.Iterations)
		if sh.iterations == 0 {
			sh.empty, sh.why = true, fmt.Sprintf("%d iterations", b.Iterations)
		}
	}
	if sh.workers == 0 {
		sh.empty, sh.why = true, fmt.Sprintf("%d workers", spec.Concurrency)
	}
	return sh
}

// result is the share as the cell records it; nil for the whole plan.
func (sh cellShare) result(s results.Segment) *results.Share {
	if s.Whole() {
		return nil
	}
	out := &results.Share{Workers: sh.workers, Iterations: sh.iterations, Empty: sh.empty}
	if sh.empty {
		out.Workers = 0
	}
	if sh.sched.Rate > 0 {
		out.Rate = sh.sched.Rate / float64(max(sh.sched.Stride, 1))
	}
	return out
}

// JobIndexEnv is where a Kubernetes Indexed Job puts its pod's index
// (0-based), which ParseSegment reads for "auto/N".
const JobIndexEnv = "JOB_COMPLETION_INDEX"

// TaskSlotEnv is where deploy/swarm's stack puts a Docker Swarm task's
// slot ("{{.Task.Slot}}": Swarm expands templates in a service's
// environment, not in its command), which ParseSegment reads for "auto/N".
// The generators are a replicated service, whose slots are 1 to N: slot i
// is segment i. (A replicated-job's slots start at 0, and the engine
// starts a failed job task again in its slot, so a segment could run
// twice: deploy/README.md.)
const TaskSlotEnv = "METEORBENCH_TASK_SLOT"

// ParseSegment reads run --segment: "i/N", or "auto/N" with i from an
// Indexed Job's $JOB_COMPLETION_INDEX (0-based) + 1 or a Swarm service's
// $METEORBENCH_TASK_SLOT (1-based); "" is the whole plan.
func ParseSegment(text string) (results.Segment, error) {
	if n, ok := strings.CutPrefix(text, "auto/"); ok {
		i, err := autoIndex(n)
		if err != nil {
			return results.Segment{}, err
		}
		text = strconv.Itoa(i) + "/" + n
	}
	if text == "" {
		return results.Segment{}, nil
	}
	return results.ParseSegment(text)
}

// autoIndex is the segment index of "auto/n" from the environment.
func autoIndex(n string) (int, error) {
	job, slot := os.Getenv(JobIndexEnv), os.Getenv(TaskSlotEnv)
	isJob, isSlot := job != "", slot != ""
	switch {
	case isJob && isSlot:
		return 0, fmt.Errorf("segment auto/%s: both $%s (%q) and $%s (%q) are set: set one", n, JobIndexEnv, job, TaskSlotEnv, slot)
	case isJob:
		idx, err := strconv.Atoi(job)
		if err != nil || idx < 0 {
			return 0, fmt.Errorf("segment auto/%s: $%s is %q, want the 0-based index of an Indexed Job's pod", n, JobIndexEnv, job)
		}
		return idx + 1, nil
	case isSlot:
		idx, err := strconv.Atoi(slot)
		if err != nil || idx < 1 {
			return 0, fmt.Errorf("segment auto/%s: $%s is %q, want the slot of a replicated Swarm service's task, 1 to %s ({{.Task.Slot}}; a replicated-job's slots start at 0: run the generators as a replicated service, see deploy/swarm)", n, TaskSlotEnv, slot, n)
		}
		return idx, nil
	}
	return 0, fmt.Errorf("segment auto/%s: neither $%s (a Kubernetes Indexed Job) nor $%s (a Swarm task slot) is set: give the segment as i/%s", n, JobIndexEnv, TaskSlotEnv, n)
}

// ParseStartAt reads run --start-at: an RFC 3339 time, or +DURATION from
// now; "" is no start time (the zero time).
func ParseStartAt(text string, now time.Time) (time.Time, error) {
	switch {
	case text == "":
		return time.Time{}, nil
	case strings.HasPrefix(text, "+"):
		d, err := time.ParseDuration(text[1:])
		if err != nil || d < 0 {
			return time.Time{}, fmt.Errorf("start-at %q: want +DURATION (e.g. +10s) or an RFC 3339 time", text)
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, text)
	if err != nil {
		return time.Time{}, fmt.Errorf("start-at %q: want an RFC 3339 time (e.g. 2026-05-01T12:00:00Z) or +DURATION", text)
	}
	return t, nil
}
