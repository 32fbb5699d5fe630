package timing

import (
	"fmt"
	"strings"
	"testing"
)

// fakeT records what Retry says and whether it failed the test.
type fakeT struct {
	testing.TB
	logs   []string
	failed bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}
func (f *fakeT) Errorf(format string, args ...any) {
	f.failed = true
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

func TestRetry(t *testing.T) {
	for _, tc := range []struct {
		name       string
		passOn     int // the attempt that passes; 0: none
		wantTries  int
		wantFailed bool
		wantLog    string
	}{
		{"first attempt", 1, 1, false, ""},
		{"second attempt", 2, 2, false, "timing: passed on attempt 2 of 3"},
		{"never", 0, 3, true, "timing: missed in all 3 attempts (each attempt's figures are logged above): p50 9 ms > 5 ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeT{TB: t}
			tries := 0
			Retry(f, 0, func(attempt int) []string {
				tries++
				if attempt != tries {
					t.Errorf("attempt %d on try %d", attempt, tries)
				}
				if attempt == tc.passOn {
					return nil
				}
				return []string{"p50 9 ms > 5 ms"}
			})
			if tries != tc.wantTries || f.failed != tc.wantFailed {
				t.Errorf("%d tries, failed %v; want %d, %v (log %q)", tries, f.failed, tc.wantTries, tc.wantFailed, f.logs)
			}
			if tc.wantLog != "" && (len(f.logs) == 0 || f.logs[len(f.logs)-1] != tc.wantLog) {
				t.Errorf("log %q, want it to end %q", f.logs, tc.wantLog)
			}
			for _, l := range f.logs {
				if !strings.HasPrefix(l, "timing: ") {
					t.Errorf("log line %q does not start with timing:", l)
				}
			}
		})
	}
}
