package results

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Segment is one load generator's share of a plan run by several at once
// (`run --segment 2/3`): instance Index (1-based) of Count. The zero value,
// and 1/1, is the whole plan. A segment is not part of a cell's key: the
// segments' cells have the keys one instance running the whole plan would
// give, so that `meteorbench merge` puts them back together.
type Segment struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// Whole reports whether s is the whole plan (unsegmented).
func (s Segment) Whole() bool { return s.Count <= 1 }

// String is "2/3"; "1/1" for the whole plan.
func (s Segment) String() string {
	if s.Whole() {
		return "1/1"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// ParseSegment reads "i/N" with 1 <= i <= N.
func ParseSegment(text string) (Segment, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(text), "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil {
		return Segment{}, fmt.Errorf("segment %q: want i/N, e.g. 2/3", text)
	}
	if n < 1 || i < 1 || i > n {
		return Segment{}, fmt.Errorf("segment %q: want 1 <= i <= N", text)
	}
	return Segment{Index: i, Count: n}, nil
}

// Share is what a segmented run's cell measured of the whole cell: the
// instance's share of the workers, of the open-loop rate and of the
// iterations (see loadgen's segment arithmetic). Cells of an unsegmented
// run have none.
type Share struct {
	Workers int `json:"workers"`
	// Rate is the calls/s this instance offered (open loop).
	Rate float64 `json:"rate,omitempty"`
	// Iterations is this instance's share of --iterations: batches in
	// closed loop, calls in open loop (of iterations × batch).
	Iterations int `json:"iterations,omitempty"`
	// Empty is true when the share is nothing (fewer workers or iterations
	// than segments): the cell was not measured by this instance, which
	// is valid; it has no calls and says so in its warnings.
	Empty bool `json:"empty,omitempty"`
}

// Merged describes a document made by `meteorbench merge` from the result
// documents of several load generators that ran one plan together.
type Merged struct {
	// Segments says which segments were merged and which are missing or
	// doubled: "segments 1, 3 of 3 — segment 2 missing"; "2 unsegmented
	// runs of the plan: their loads added".
	Segments string `json:"segments"`
	// Missing lists the segments of Count that no input holds.
	Missing []int `json:"missing,omitempty"`
	// Instances are the inputs, in the order given.
	Instances []Instance `json:"instances"`
}

// Instance is one merged input.
type Instance struct {
	File     string    `json:"file"`
	Segment  *Segment  `json:"segment,omitempty"`
	Target   string    `json:"target"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// StartOffsetUS is how late the instance started its first cell after
	// the shared --start-at time, microseconds; nil without --start-at.
	StartOffsetUS *float64 `json:"start_offset_us,omitempty"`
	StopReason    Stop     `json:"stop_reason"`
	Calls         int64    `json:"calls"` // successful calls over all cells
}
