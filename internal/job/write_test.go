package job

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/results"
)

// A write that fails after the measurement loses nothing: the table goes
// to stdout and the JSON to a fallback file the error names.
func TestWriteFailureKeepsResult(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	res := &results.Result{Schema: results.Schema, Started: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
		Cells: []results.Cell{{CellKey: results.CellKey{Scenario: "small", Protocol: "rest", Batch: 1,
			Condition: results.Condition{Concurrency: 1}}, Calls: 3, CallsPerS: 100}}}
	var stdout, stderr bytes.Buffer
	o := Options{Output: report.OutputPlan(&stdout, []string{"json", "csv"}, filepath.Join(tmp, "gone", "run1"), "meteorbench.json")} // folder never made
	err := write(newConsole(&stderr, false), o, nil, res)
	want := filepath.Join(tmp, "meteorbench-20261201-090000.json")
	if err == nil || !strings.Contains(err.Error(), "saved to "+want) {
		t.Fatalf("error %v, want one naming %s", err, want)
	}
	if _, err := results.ReadFile(want); err != nil {
		t.Errorf("fallback: %v", err)
	}
	if !strings.Contains(stdout.String(), "small") {
		t.Errorf("stdout has no table:\n%s", stdout.String())
	}
}
