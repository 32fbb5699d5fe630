package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// segmentPlan is the plan of the three-process test: closed loop bounded
// by count, so three segments make exactly the calls of one instance.
var segmentPlan = []string{"--scenario", "small", "--proto", "rest,grpc", "--concurrency", "3", "--batch", "5",
	"--iterations", "40", "--warmup", "0", "--format", "json", "-q"}

// Three `run --segment i/3 --start-at +3s` processes against one server,
// merged, make the calls of one process running the whole plan, and the
// merged percentiles are those of the union of their histograms. report and
// compare read the merged document; merge refuses what does not fit.
func TestMergeThreeSegments(t *testing.T) {
	bin := meteorbenchBinary(t)
	addr := servertest.Start(t, server.Config{})
	dir := t.TempDir()
	var cmds []*exec.Cmd
	var stderrs []*bytes.Buffer
	for i := 1; i <= 3; i++ {
		// seg<i>.jsonl too: the document on one line (--format jsonl).
		args := append([]string{"run", "--target", addr, "--segment", fmt.Sprintf("%d/3", i), "--start-at", "+3s",
			"--format", "jsonl", "--out", filepath.Join(dir, fmt.Sprintf("seg%d", i))}, segmentPlan...)
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, stderrs = append(cmds, cmd), append(stderrs, &stderr)
	}
	for i, cmd := range cmds {
		if err := waitBounded(t, cmd); err != nil {
			t.Fatalf("segment %d: %v\n%s", i+1, err, stderrs[i])
		}
	}
	single := filepath.Join(dir, "single")
	if _, stderr, err := execute(t, append([]string{"run", "--target", addr, "--out", single}, segmentPlan...)...); err != nil {
		t.Fatalf("single run: %v\n%s", err, stderr)
	}
	segs := []string{filepath.Join(dir, "seg1.json"), filepath.Join(dir, "seg2.json"), filepath.Join(dir, "seg3.json")}
	merged := filepath.Join(dir, "merged")
	_, stderr, err := execute(t, append(append([]string{"merge"}, segs...), "--out", merged)...)
	if err != nil {
		t.Fatalf("merge: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "segments 1, 2, 3 of 3") || !strings.Contains(stderr, "after --start-at") {
		t.Errorf("merge's summary: %q", stderr)
	}
	m, err := results.ReadFile(merged + ".json")
	if err != nil {
		t.Fatal(err)
	}
	one, err := results.ReadFile(single + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var parts []*results.Result
	for _, s := range segs {
		r, err := results.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		if r.Env.StartOffsetUS == nil || r.Settings.StartAt == nil || r.Settings.Segment == nil {
			t.Errorf("%s: start offset %v, start at %v, segment %v", s, r.Env.StartOffsetUS, r.Settings.StartAt, r.Settings.Segment)
		}
		parts = append(parts, r)
	}
	if len(m.Cells) != len(one.Cells) || len(m.Merged.Instances) != 3 {
		t.Fatalf("%d merged cells, %d single; %d instances", len(m.Cells), len(one.Cells), len(m.Merged.Instances))
	}
	for i := range m.Cells {
		mc, oc := &m.Cells[i], &one.Cells[i]
		if mc.Key() != oc.Key() {
			t.Fatalf("cell %d: merged %s, single %s: the keys must be the plan's", i, mc.Key(), oc.Key())
		}
		if mc.Calls != oc.Calls || mc.Calls != 200 || mc.Errors != 0 || mc.Batches != 40 {
			t.Errorf("%s: three segments made %d calls (%d batches), one instance %d: want 200 each", mc.Key(), mc.Calls, mc.Batches, oc.Calls)
		}
		union := results.NewHistogram()
		for _, p := range parts {
			h, err := results.DecodeHistogram(p.Cells[i].Histograms.Latency)
			if err != nil {
				t.Fatal(err)
			}
			if dropped := union.Merge(h); dropped != 0 {
				t.Fatalf("dropped %d", dropped)
			}
		}
		if want := results.LatencyOf(union, mc.LatencyUS.Mean*1e3); mc.LatencyUS != want {
			t.Errorf("%s: merged latency %+v, union of the segments' histograms %+v", mc.Key(), mc.LatencyUS, want)
		}
		t.Logf("%s: calls %d (single %d); p50 %.0f µs, p99 %.0f µs merged; %.0f, %.0f single; calls/s %.0f merged, %.0f single",
			mc.Key(), mc.Calls, oc.Calls, mc.LatencyUS.P50, mc.LatencyUS.P99, oc.LatencyUS.P50, oc.LatencyUS.P99, mc.CallsPerS, oc.CallsPerS)
	}

	// report and compare read the merged document.
	if out, stderr, err := execute(t, "report", merged+".json"); err != nil || !strings.Contains(out, "small") {
		t.Errorf("report: %v\n%s", err, stderr)
	}
	if _, stderr, err := execute(t, "compare", single+".json", merged+".json"); err != nil {
		t.Errorf("compare: %v\n%s", err, stderr)
	}

	// Two whole runs of the plan merge: their loads added.
	single2 := filepath.Join(dir, "single2")
	if _, stderr, err := execute(t, append([]string{"run", "--target", addr, "--out", single2}, segmentPlan...)...); err != nil {
		t.Fatalf("second single run: %v\n%s", err, stderr)
	}
	out, _, err := execute(t, "merge", single+".json", single2+".json", "-q")
	if err != nil {
		t.Fatalf("merge two whole runs: %v", err)
	}
	both, err := results.Read(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if both.Cells[0].Calls != 400 {
		t.Errorf("two whole runs merged: %d calls, want 400", both.Cells[0].Calls)
	}

	// What does not fit is refused, naming the difference.
	copyOf := filepath.Join(dir, "copy-of-seg1.json")
	b, _ := os.ReadFile(segs[0])
	os.WriteFile(copyOf, b, 0o644)
	otherSchema := filepath.Join(dir, "v2.json")
	os.WriteFile(otherSchema, bytes.Replace(b, []byte(`"meteorbench/v1"`), []byte(`"meteorbench/v2"`), 1), 0o644)
	otherPlan := filepath.Join(dir, "other-plan.json")
	os.WriteFile(otherPlan, bytes.Replace(bytes.Replace(b, []byte(`"iterations": 40`), []byte(`"iterations": 80`), 1), []byte(`"index": 1`), []byte(`"index": 2`), 1), 0o644)
	again := filepath.Join(dir, "seg1-again.json") // segment 1 of another run
	r1, _ := results.ReadFile(segs[0])
	r1.Started = r1.Started.Add(time.Minute)
	var buf bytes.Buffer
	results.Write(&buf, r1)
	os.WriteFile(again, buf.Bytes(), 0o644)
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"the same file twice", []string{segs[0], segs[1], segs[0]}, 2, "are the same file"},
		{"a copy of a run", []string{segs[0], copyOf}, 1, "are the same run"},
		{"another plan", []string{segs[1], otherPlan}, 1, "is another plan than"},
		{"a segment twice", []string{segs[0], segs[1], again}, 1, "segment 1/3 given twice"},
		{"another schema", []string{segs[1], otherSchema}, 2, `schema "meteorbench/v2"`}, // a bad argument
		{"segments and a whole run", []string{segs[0], single + ".json"}, 1, "whole runs with whole runs"},
		{"one whole run", []string{single + ".json"}, 1, "want at least two documents"},
		{"stdin twice", []string{"-", segs[0], "-"}, 2, "given twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := execute(t, append([]string{"merge"}, tt.args...)...)
			if code := exitCodeQuiet(err); code != tt.code || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("exit %d, error %v; want %d and %q", code, err, tt.code, tt.want)
			}
		})
	}

	// JSON Lines: the three segments' --format jsonl documents in one stream
	// on stdin (as `docker service logs --raw` gathers them, deploy/swarm)
	// merge into the same cells as their files.
	var stream bytes.Buffer
	for i := 1; i <= 3; i++ {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("seg%d.jsonl", i)))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Count(b, []byte("\n")) != 1 || !bytes.HasSuffix(b, []byte("\n")) {
			t.Fatalf("seg%d.jsonl is not one line: %d newlines", i, bytes.Count(b, []byte("\n")))
		}
		stream.Write(b)
		if i == 2 {
			stream.WriteString("\n") // blank lines are skipped
		}
	}
	fromStdin := func(stdin []byte, args ...string) (string, string, error) {
		cmd := exec.Command(bin, append([]string{"merge"}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}
	out, stderr, err = fromStdin(stream.Bytes(), "-")
	if err != nil {
		t.Fatalf("merge - (three JSON Lines): %v\n%s", err, stderr)
	}
	viaStream, err := results.Read(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if viaStream.Merged.Segments != "segments 1, 2, 3 of 3" || len(viaStream.Merged.Missing) != 0 {
		t.Errorf("merge -: %q, missing %v", viaStream.Merged.Segments, viaStream.Merged.Missing)
	}
	for i := range m.Cells {
		if a, b := viaStream.Cells[i], m.Cells[i]; a.Calls != b.Calls || a.LatencyUS != b.LatencyUS {
			t.Errorf("%s: from the stream %d calls %+v, from the files %d calls %+v", a.Key(), a.Calls, a.LatencyUS, b.Calls, b.LatencyUS)
		}
	}
	for _, want := range []string{"stdin:1", "stdin:2", "stdin:4"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("merge -: the inputs are named by line; %q lacks %s", stderr, want)
		}
	}
	t.Logf("merge - of three JSON Lines: %s", strings.TrimSpace(stderr))

	// A generator that died is a missing segment: segments 1 and 3 in a
	// stream, or segment 3 alone in its file.
	lines := bytes.SplitAfter(stream.Bytes(), []byte("\n"))
	out, stderr, err = fromStdin(append(append([]byte(nil), lines[0]...), lines[3]...), "-", "-q")
	if err != nil {
		t.Fatalf("merge - (segments 1 and 3): %v\n%s", err, stderr)
	}
	gap, err := results.Read(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(gap.Merged.Missing) != 1 || gap.Merged.Missing[0] != 2 || !slices.ContainsFunc(gap.Warnings, func(w string) bool {
		return strings.Contains(w, "segment 2 missing") && strings.Contains(w, "cover 2 of the 3 segments")
	}) {
		t.Errorf("segments 1 and 3: missing %v, warnings %q", gap.Merged.Missing, gap.Warnings)
	}
	out, stderr, err = execute(t, "merge", filepath.Join(dir, "seg3.jsonl"))
	if err != nil {
		t.Fatalf("merge seg3.jsonl alone: %v\n%s", err, stderr)
	}
	alone, err := results.Read(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(alone.Merged.Missing) != "[1 2]" || alone.Cells[0].Calls == 0 {
		t.Errorf("segment 3 alone: missing %v, %d calls", alone.Merged.Missing, alone.Cells[0].Calls)
	}

	// Each line is checked as a file is: a bad one is named by its line.
	bad := append(append(append([]byte(nil), lines[0]...), []byte("{\"schema\": \"meteorbench/v1\"\n")...), lines[1]...)
	_, stderr, err = fromStdin(bad, "-")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr, "stdin:2: not a meteorbench result") {
		t.Errorf("a truncated line: %v, %q; want exit 2 naming stdin:2", err, stderr)
	}
}
