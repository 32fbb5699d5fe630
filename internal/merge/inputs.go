package merge

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/meteorbench/meteorbench/internal/results"
)

// This file checks that the inputs are one plan, each run and segment once.

// planDiff names the first setting two documents' plans differ in ("" when
// they are one plan). The segment and the start time are not the plan.
func planDiff(a, b results.Settings) string {
	a.Segment, b.Segment = nil, nil
	a.StartAt, b.StartAt = nil, nil
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	t := va.Type()
	for i := range t.NumField() {
		fa, fb := va.Field(i).Interface(), vb.Field(i).Interface()
		if !reflect.DeepEqual(norm(fa), norm(fb)) {
			name := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
			return fmt.Sprintf("%s %v, not %v", name, show(fb), show(fa))
		}
	}
	return ""
}

// norm makes an empty slice and a nil one equal.
func norm(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice && rv.Len() == 0 {
		return nil
	}
	return v
}

func show(v any) string {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice {
		parts := make([]string, rv.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(rv.Index(i).Interface())
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return fmt.Sprint(v)
}

// sameRun refuses a run given twice (the same file, or a copy of it): the
// same start and end to the nanosecond and the same segment.
func sameRun(inputs []Input) error {
	type id struct {
		started, finished time.Time
		segment           string
	}
	seen := map[id]string{}
	for _, in := range inputs {
		r := in.Result
		seg := "1/1"
		if r.Settings.Segment != nil {
			seg = r.Settings.Segment.String()
		}
		k := id{r.Started.UTC(), r.Finished.UTC(), seg}
		if prev, ok := seen[k]; ok {
			return fmt.Errorf("merge: %s and %s are the same run (started %s, segment %s): give each run once", prev, in.Name, r.Started.Format(time.RFC3339Nano), seg)
		}
		seen[k] = in.Name
	}
	return nil
}

// segments checks the inputs' segments and describes them: all of one
// count, each at most once; or all whole runs.
func segments(inputs []Input) (*results.Merged, error) {
	info := &results.Merged{}
	count := -1
	byIndex := map[int]string{}
	for _, in := range inputs {
		r := in.Result
		inst := results.Instance{
			File: in.Name, Target: r.Env.Target, Started: r.Started, Finished: r.Finished,
			StartOffsetUS: r.Env.StartOffsetUS, StopReason: r.Stop,
		}
		for i := range r.Cells {
			sum, err := results.AddInt64(inst.Calls, r.Cells[i].Calls)
			if err != nil {
				return nil, fmt.Errorf("merge: %s: the calls of its cells: %w", in.Name, err)
			}
			inst.Calls = sum
		}
		n := 1
		if s := r.Settings.Segment; s != nil && !s.Whole() {
			seg := *s
			inst.Segment = &seg
			n = s.Count
		}
		switch {
		case count == -1:
			count = n
		case n != count && (n == 1 || count == 1):
			return nil, fmt.Errorf("merge: %s is %s, %s is %s: merge segments with segments, whole runs with whole runs",
				in.Name, segName(inst.Segment), inputs[0].Name, segName(inputs[0].Result.Settings.Segment))
		case n != count:
			return nil, fmt.Errorf("merge: %s is segment %s, %s is of %d: the segments overlap; merge the segments of one --segment i/N count", in.Name, inst.Segment, inputs[0].Name, count)
		}
		if inst.Segment != nil {
			if prev, ok := byIndex[inst.Segment.Index]; ok {
				return nil, fmt.Errorf("merge: segment %s given twice (%s, %s)", inst.Segment, prev, in.Name)
			}
			byIndex[inst.Segment.Index] = in.Name
		}
		info.Instances = append(info.Instances, inst)
	}
	if count == 1 {
		info.Segments = fmt.Sprintf("%d whole runs of the plan: their loads added", len(inputs))
		return info, nil
	}
	var have []string
	for i := 1; i <= count; i++ {
		if _, ok := byIndex[i]; ok {
			have = append(have, strconv.Itoa(i))
		} else {
			info.Missing = append(info.Missing, i)
		}
	}
	word := "segments"
	if len(have) == 1 {
		word = "segment"
	}
	info.Segments = fmt.Sprintf("%s %s of %d", word, strings.Join(have, ", "), count)
	if len(info.Missing) > 0 {
		miss := make([]string, len(info.Missing))
		for i, m := range info.Missing {
			miss[i] = strconv.Itoa(m)
		}
		word = "segment"
		if len(miss) > 1 {
			word = "segments"
		}
		info.Segments += fmt.Sprintf(" — %s %s missing", word, strings.Join(miss, ", "))
	}
	return info, nil
}

func segName(s *results.Segment) string {
	if s == nil || s.Whole() {
		return "a whole run"
	}
	return "segment " + s.String()
}
