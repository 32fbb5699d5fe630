// Package timing is for tests whose assertions depend on the machine's
// timing: a rate, a latency, what the garbage collector had not yet
// collected at a sampled heap peak. On a shared 2-core machine such a
// figure misses now and then for reasons that are not the code's, so each
// such assertion is retried, every attempt's figures are in the log, and a
// miss in the last attempt fails the test; a test that cannot judge on
// this machine at all skips with its reason (Skip), which `go test -v`
// and CI's log show. What does not depend on timing (physics, a wrong
// answer, an error) is checked on t as usual and never retried.
//
// Every line this package writes starts "timing:", so a log can be searched
// for the assertions that depend on timing and how they fared.
package timing

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Attempts is how many times Retry tries by default.
const Attempts = 3

// Retry runs try up to n times (Attempts when n < 1), until an attempt
// reports no miss. try is given the attempt's number (from 1); it logs the
// attempt's figures and returns its misses: each assertion that depends on
// timing and was out of bounds, in words with the figure. After the last
// attempt with misses, Retry fails t with them. A t.Fatal in try (a failure
// that does not depend on timing) ends the test at once.
func Retry(t testing.TB, n int, try func(attempt int) (misses []string)) {
	t.Helper()
	if n < 1 {
		n = Attempts
	}
	for attempt := 1; attempt <= n; attempt++ {
		misses := try(attempt)
		if len(misses) == 0 {
			if attempt > 1 {
				t.Logf("timing: passed on attempt %d of %d", attempt, n)
			}
			return
		}
		t.Logf("timing: attempt %d of %d missed: %s", attempt, n, strings.Join(misses, "; "))
		if attempt == n {
			t.Errorf("timing: missed in all %d attempts (each attempt's figures are logged above): %s", n, strings.Join(misses, "; "))
		}
	}
}

// Skip skips a test that cannot judge its timing on this machine, saying
// why ("timing: skipped: ..."), as `go test -v` and CI's log show it.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Skip("timing: skipped: " + fmt.Sprintf(format, args...))
}

// LoadAverage is the machine's one-minute load average (/proc/loadavg), or
// -1 where it cannot be read: how busy the machine was around an attempt,
// for its log line and for a test that judges only a quiet machine.
func LoadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return -1
	}
	f, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return -1
	}
	return f
}
