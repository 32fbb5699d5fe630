package summary

import (
	"testing"

	"github.com/meteorbench/meteorbench/internal/results"
)

// Repeats merged keep one example per class, the first repeat's.
func TestMergeCellKeepsOneExample(t *testing.T) {
	k := results.CellKey{Protocol: "rest", Scenario: "small", Batch: 1, Condition: results.Condition{Concurrency: 1}}
	m := mergeCell([]results.Cell{
		{CellKey: k, Errors: 1, ErrorClasses: results.ErrorCounts{"timeout": 1}, ErrorExamples: map[results.ErrorClass]string{"timeout": "first"}},
		{CellKey: k, Errors: 2, ErrorClasses: results.ErrorCounts{"timeout": 1, "transport": 1}, ErrorExamples: map[results.ErrorClass]string{"timeout": "second", "transport": "refused"}},
	})
	if m.ErrorExamples["timeout"] != "first" || m.ErrorExamples["transport"] != "refused" || len(m.ErrorExamples) != 2 {
		t.Errorf("merged examples %q", m.ErrorExamples)
	}
}

// A repeat too short to complete one batch has no time per batch: the
// merged cell and its interval come from the repeats that have one, never
// from a 0 standing in for "none".
func TestMergeCellIgnoresRepeatsWithoutBatches(t *testing.T) {
	cell := func(batches int64, batchMS float64) results.Cell {
		return results.Cell{
			CellKey: results.CellKey{Protocol: "rest", Scenario: "large", Batch: 100, Condition: results.Condition{Concurrency: 1}},
			Calls:   150, CallsPerS: 100, Batches: batches, BatchMS: results.Spread{Mean: batchMS},
		}
	}
	m := mergeCell([]results.Cell{cell(1, 900), cell(0, 0), cell(1, 1100), cell(1, 1000)})
	if m.BatchMS.Mean != 1000 {
		t.Errorf("merged time per batch = %v, want 1000 (the median of the three real ones)", m.BatchMS.Mean)
	}
	iv, ok := m.CI["batch_ms_mean"]
	if !ok || iv.N != 3 || iv.Lo != 900 || iv.Hi != 1100 {
		t.Errorf("batch_ms_mean interval = %+v (present %v), want n=3 over [900, 1100]", iv, ok)
	}
	if _, has := m.Repeats[1]["batch_ms_mean"]; has {
		t.Error("the repeat without a batch reports a time per batch")
	}
	if m.Batches != 3 || m.Calls != 600 {
		t.Errorf("totals: %d batches, %d calls; want 3, 600", m.Batches, m.Calls)
	}
}
