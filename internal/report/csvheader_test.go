package report

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// The csv headers only grow at their end: the columns as they were when the
// dimensions got theirs (testdata/*csvheader-was.txt, one a line, never
// rewritten by -update) stay where they are, whatever is added after.
func TestCSVHeaderOnlyGrows(t *testing.T) {
	startsWithEarlier(t, "testdata/csvheader-was.txt", CSVHeader)
	startsWithEarlier(t, "testdata/capacitycsvheader-was.txt", CapacityCSVHeader)
}

func startsWithEarlier(t *testing.T, path string, header []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	was := strings.Fields(string(b))
	if len(was) < 30 {
		t.Fatalf("%s: %d columns, want the whole earlier header", path, len(was))
	}
	if len(header) < len(was) || !slices.Equal(header[:len(was)], was) {
		t.Errorf("csv header\n%q\ndoes not start with the earlier one in %s\n%q", header, path, was)
	}
}
