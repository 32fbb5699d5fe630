package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/results"
)

func TestParseSegmentAndStartAt(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	seg, err := ParseSegment("2/3")
	at, err2 := ParseStartAt("+10s", now)
	if err != nil || err2 != nil || seg != (results.Segment{Index: 2, Count: 3}) || !at.Equal(now.Add(10*time.Second)) {
		t.Errorf("2/3 +10s: %v %v %v %v", seg, at, err, err2)
	}
	if at, err := ParseStartAt("2026-05-01T12:00:05.5Z", now); err != nil || !at.Equal(now.Add(5500*time.Millisecond)) {
		t.Errorf("RFC 3339: %v %v", at, err)
	}
	if seg, err := ParseSegment(""); err != nil || !seg.Whole() {
		t.Errorf("no segment: %v %v", seg, err)
	}
	if at, err := ParseStartAt("", now); err != nil || !at.IsZero() {
		t.Errorf("no start time: %v %v", at, err)
	}
	// An Indexed Job's pod 2 (0-based) is segment 3.
	t.Setenv(JobIndexEnv, "2")
	if seg, err := ParseSegment("auto/3"); err != nil || seg != (results.Segment{Index: 3, Count: 3}) {
		t.Errorf("auto/3 with index 2: %v %v", seg, err)
	}
	if _, err := ParseSegment("auto/2"); err == nil {
		t.Error("auto/2 with index 2: no error")
	}
	t.Setenv(JobIndexEnv, "")
	if _, err := ParseSegment("auto/3"); err == nil || !strings.Contains(err.Error(), JobIndexEnv) || !strings.Contains(err.Error(), TaskSlotEnv) {
		t.Errorf("auto/3 without the index: %v", err)
	}
	// A replicated Swarm service's task slot (1-based) is the segment.
	t.Setenv(TaskSlotEnv, "2")
	if seg, err := ParseSegment("auto/3"); err != nil || seg != (results.Segment{Index: 2, Count: 3}) {
		t.Errorf("auto/3 with slot 2: %v %v", seg, err)
	}
	t.Setenv(JobIndexEnv, "1")
	if _, err := ParseSegment("auto/3"); err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("auto/3 with an index and a slot: %v, want an error naming both", err)
	}
	t.Setenv(JobIndexEnv, "")
	// A replicated-job's first slot is 0: refused, saying why.
	for _, bad := range []string{"0", "x", "-1"} {
		t.Setenv(TaskSlotEnv, bad)
		if _, err := ParseSegment("auto/3"); err == nil || !strings.Contains(err.Error(), TaskSlotEnv) {
			t.Errorf("auto/3 with slot %q: %v, want an error naming %s", bad, err, TaskSlotEnv)
		}
	}
	t.Setenv(TaskSlotEnv, "4")
	if _, err := ParseSegment("auto/3"); err == nil {
		t.Error("auto/3 with slot 4: no error")
	}
	t.Setenv(TaskSlotEnv, "")
	for _, bad := range []string{"0/3", "4/3", "1/0", "x", "1/3/4"} {
		if _, err := ParseSegment(bad); err == nil || !strings.HasPrefix(err.Error(), "segment ") {
			t.Errorf("%q: %v, want an error naming the segment", bad, err)
		}
	}
	for _, bad := range []string{"+-1s", "tomorrow", "+soon"} {
		if _, err := ParseStartAt(bad, now); err == nil || !strings.HasPrefix(err.Error(), "start-at ") {
			t.Errorf("%q: %v, want an error naming start-at", bad, err)
		}
	}
}
