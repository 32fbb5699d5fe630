package plan

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/meteorbench/meteorbench/internal/results"
)

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
