package report

import (
	"fmt"
	"math"
	"strconv"

	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// CapacityChange is one capacity series, old against new.
type CapacityChange struct {
	Key string         `json:"key"` // "small · grpc · p99<=50ms · server on 1 CPU"
	Old *CapacityFound `json:"old"`
	New *CapacityFound `json:"new"`
	// DeltaPct is (new-old)/old of the found rates in percent; nil when a
	// side is missing or found none. Overlap is true when the two brackets
	// overlap: within the search's precision, no change shown.
	DeltaPct *float64 `json:"delta_pct"`
	Overlap  bool     `json:"overlap"`
}

// CapacityFound is what one side's search found.
type CapacityFound struct {
	Rate           float64 `json:"rate"`
	Lo             float64 `json:"lo"`
	Hi             float64 `json:"hi"`
	GeneratorBound float64 `json:"generator_bound,omitempty"`
	Complete       bool    `json:"complete"`
}

// capacityKey names a capacity series across documents.
func capacityKey(c *results.Capacity) string {
	k := string(c.Scenario) + " · " + string(c.Protocol) + " · " + c.Objective
	if f := c.Condition.Features(); f != "" {
		k += " · " + f
	}
	if c.Condition.Concurrency > 0 {
		k += " · " + strconv.Itoa(c.Condition.Concurrency) + " workers"
	}
	return k
}

// compareCapacity pairs the two documents' capacity series, in the old
// document's order, then the new one's own.
func compareCapacity(old, new *results.Result) []CapacityChange {
	var out []CapacityChange
	at := map[string]int{}
	found := func(c *results.Capacity) *CapacityFound {
		return &CapacityFound{Rate: c.Rate, Lo: c.Lo, Hi: c.Hi, GeneratorBound: c.GeneratorBound, Complete: c.Complete}
	}
	for i := range old.Capacity {
		k := capacityKey(&old.Capacity[i])
		at[k] = len(out)
		out = append(out, CapacityChange{Key: k, Old: found(&old.Capacity[i])})
	}
	for i := range new.Capacity {
		k := capacityKey(&new.Capacity[i])
		if j, ok := at[k]; ok {
			out[j].New = found(&new.Capacity[i])
			continue
		}
		out = append(out, CapacityChange{Key: k, New: found(&new.Capacity[i])})
	}
	for i := range out {
		o, n := out[i].Old, out[i].New
		if o == nil || n == nil || o.Rate == 0 || n.Rate == 0 {
			continue
		}
		pct := (n.Rate - o.Rate) / o.Rate * 100
		out[i].DeltaPct = &pct
		// [lo, hi) brackets; an open one reaches up without end.
		top := func(f *CapacityFound) float64 {
			if f.open() {
				return math.Inf(1)
			}
			return f.Hi
		}
		out[i].Overlap = o.Lo < top(n) && n.Lo < top(o)
	}
	return out
}

// open says whether the bracket has no top: no rate failed, or the
// generator could not offer more (results.CapacitySearch.LowerBound).
func (f *CapacityFound) open() bool { return f.Hi == 0 || f.GeneratorBound > 0 }

// text is one side's found rate: "9,800 [9,500, 10,100]", "≥ 3,200
// (generator-bound)", "none", "–" when not searched.
func (f *CapacityFound) text() string {
	switch {
	case f == nil:
		return "–"
	case f.Rate == 0:
		return "none"
	case f.GeneratorBound > 0:
		return "≥ " + format.Rate(f.Rate) + " (generator-bound)"
	case f.open():
		s := "≥ " + format.Rate(f.Rate) + " (no rate failed"
		if !f.Complete {
			s += "; stopped early"
		}
		return s + ")"
	}
	s := format.Rate(f.Rate)
	if f.Hi > 0 {
		s += " [" + format.Rate(f.Lo) + ", " + format.Rate(f.Hi) + "]"
	}
	if !f.Complete {
		s += " (stopped early)"
	}
	return s
}

// deltaText is the change of the found rate: "+6.1%", "+2.0% (brackets
// overlap)", "n/a".
func (c *CapacityChange) deltaText() string {
	if c.DeltaPct == nil {
		return "n/a"
	}
	s := fmt.Sprintf("%+.1f%%", *c.DeltaPct)
	if c.Overlap {
		s += " (brackets overlap)"
	}
	return s
}

// compareCapacityText prints the capacity series' found rates, old and new,
// with their brackets and the change.
func compareCapacityText(ew *errWriter, cmp *Comparison, md bool, esc func(string) string) {
	if len(cmp.Capacity) == 0 {
		return
	}
	if md {
		ew.printf("\n## Capacity (found calls/s [lo, hi])\n\n| | old | new | delta |\n|:--|--:|--:|--:|\n")
		for _, c := range cmp.Capacity {
			ew.printf("| %s | %s | %s | %s |\n", esc(c.Key), esc(c.Old.text()), esc(c.New.text()), esc(c.deltaText()))
		}
		return
	}
	ew.printf("\nCapacity (found calls/s [lo, hi]), old → new:\n")
	tw := columns(ew)
	for _, c := range cmp.Capacity {
		fmt.Fprintf(tw, "  %s\t%s\t→ %s\t%s\n", c.Key, c.Old.text(), c.New.text(), c.deltaText())
	}
	tw.Flush()
}
