package report

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/internal/results"
)

// Every testdata document's cell keys (and capacity series' conditions)
// are those the implementation before dimensions became a table computed:
// golden/keys.txt was written by it. Merge and compare match on these keys.
func TestTestdataKeysUnchanged(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no testdata documents: %v", err)
	}
	var b strings.Builder
	for _, p := range paths {
		r, err := results.Load(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(filepath.Base(p) + ":\n")
		for _, c := range r.Cells {
			b.WriteString("  " + c.Key() + " | " + c.Condition.Label() + "\n")
		}
		for _, c := range r.Capacity {
			k := results.CellKey{Scenario: c.Scenario, Protocol: c.Protocol, Condition: c.Condition}
			b.WriteString("  capacity " + k.Key() + " | " + c.Condition.Label() + "\n")
		}
	}
	golden(t, "keys.txt", []byte(b.String()))
}
