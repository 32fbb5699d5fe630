package job

import (
	"bytes"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
)

// lastFrame is the last progress bar drawn to a terminal's output.
func lastFrame(out string) string {
	frames := strings.FieldsFunc(out, func(r rune) bool { return r == '\r' || r == '\n' })
	for i := len(frames) - 1; i >= 0; i-- {
		if strings.Contains(frames[i], "%") {
			return frames[i]
		}
	}
	return ""
}

// The bar ends at 100% when every cell was measured (it stayed at "50%
// (1/2)", the last cell's start), and is removed, not shown complete, when
// the run stopped early.
func TestProgressBarEnd(t *testing.T) {
	var buf bytes.Buffer
	u := &console{w: &buf, tty: true}
	u.progress(plan.Progress{Done: 0, Total: 2, Cell: "small rest"})
	u.progress(plan.Progress{Done: 1, Total: 2, Cell: "small grpc"})
	u.progress(plan.Progress{Done: 2, Total: 2})
	u.done()
	if f := lastFrame(buf.String()); !strings.Contains(f, "100%") || !strings.Contains(f, "(2/2)") {
		t.Errorf("last frame %q, want 100%% (2/2)", f)
	}
	buf.Reset()
	u = &console{w: &buf, tty: true}
	u.progress(plan.Progress{Done: 0, Total: 2, Cell: "small rest"})
	u.progress(plan.Progress{Done: 1, Total: 2})
	u.done()
	if f := lastFrame(buf.String()); strings.Contains(f, "100%") {
		t.Errorf("an interrupted run's bar shows %q", f)
	}
}
