package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/internal/results"
)

// liveRun feeds r to a Live as the run command would: the header before
// the first cell, each group as soon as it is measured, the end.
func liveRun(t *testing.T, r *results.Result) string {
	t.Helper()
	var buf bytes.Buffer
	start := &results.Result{Schema: r.Schema, Env: r.Env, Settings: r.Settings, Started: r.Started}
	l := NewLive(&buf, start)
	for _, g := range groupCells(r) {
		cells := make([]results.Cell, len(g.Cells))
		for i, c := range g.Cells {
			cells[i] = *c
		}
		if err := l.Group(cells); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Finish(r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// blocks splits table output at its "== ... ==" headings.
func blocks(out string) map[string]string {
	m := map[string]string{}
	for _, b := range strings.Split(out, "\n== ")[1:] {
		title := b[:strings.Index(b, " ==")]
		if i := strings.Index(b, "\n\n"); i >= 0 {
			b = b[:i] // a section has no blank line; what follows is the end
		}
		m[title] = strings.TrimRight("== "+b, "\n")
	}
	return m
}

func TestLive(t *testing.T) {
	for _, name := range reportFixtures {
		t.Run(name, func(t *testing.T) {
			r := loadFixture(t, name)
			final := string(render(t, "table", r))
			live := liveRun(t, r)
			// The environment first, as the table has it (less what only
			// the end knows: how long it took, why it stopped).
			if !strings.HasPrefix(live, "meteorbench     v0.0.0-fixture\n") || strings.Contains(live[:strings.Index(live, "\n== ")], "took") {
				t.Errorf("live header:\n%s", live[:strings.Index(live, "\n== ")])
			}
			lb := blocks(live)
			fb := blocks(final)
			if len(lb) != len(fb) {
				t.Errorf("live has %d sections, the table %d", len(lb), len(fb))
			}
			for title, want := range fb {
				if title != "summary" {
					// The verdict's ratios come from the whole run: the
					// live sections, printed before it ends, have none.
					var keep []string
					for _, l := range strings.Split(want, "\n") {
						if !strings.HasPrefix(l, "=> ") && !strings.HasPrefix(l, "   verdict over batches") {
							keep = append(keep, l)
						}
					}
					want = strings.Join(keep, "\n")
				}
				if got := lb[title]; got != want {
					t.Errorf("section %q differs:\nlive:\n%s\ntable:\n%s", title, got, want)
				}
			}
			// Every line the table has and live lacks is one LiveNote
			// names (the note itself included): the .txt of --out
			// explains its extra lines.
			liveLines := map[string]bool{}
			for _, l := range strings.Split(live, "\n") {
				liveLines[l] = true
			}
			for _, l := range strings.Split(final, "\n") {
				explained := strings.HasPrefix(l, "=> ") || strings.HasPrefix(l, "   verdict over batches") ||
					strings.HasPrefix(l, "run ") || strings.HasPrefix(l, "stopped ") || strings.HasPrefix(l, "repeats ") || strings.Contains(LiveNote, l) ||
					strings.HasPrefix(l, "*** ") // the partial run's banner: at the top of the table, at the end of live
				if !liveLines[l] && !explained {
					t.Errorf("the table has %q, live has not, and LiveNote does not say why", l)
				}
			}
			if strings.Contains(final, "\n=> ") && !strings.Contains(final, LiveNote) {
				t.Error("the table has => lines and no LiveNote")
			}
			// The summary is the last section, and run warnings precede it.
			if !strings.Contains(live[strings.LastIndex(live, "\n== "):], "== summary ==") {
				t.Errorf("summary not last:\n%s", live)
			}
			for _, w := range r.Warnings {
				if !strings.Contains(live, "warning: "+w) {
					t.Errorf("run warning %q missing", w)
				}
			}
			if r.Interrupted && !strings.Contains(live, interruptedBanner) {
				t.Error("partial run: no banner at the end")
			}
		})
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

// A write error stops the live output and is returned from then on.
func TestLiveWriteError(t *testing.T) {
	r := loadFixture(t, "basic")
	l := NewLive(&failWriter{n: 3}, r)
	g := groupCells(r)[0]
	cells := []results.Cell{*g.Cells[0], *g.Cells[1]}
	if err := l.Group(cells); err == nil || err.Error() != "disk full" {
		t.Errorf("Group: %v, want disk full", err)
	}
	if err := l.Finish(r); err == nil {
		t.Error("Finish after a write error: nil")
	}
}
