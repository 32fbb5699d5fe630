package merge

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/results"
)

// doc is a synthetic segment document with one cell whose latency
// histogram holds calls values drawn from rng.
func doc(t *testing.T, seg *results.Segment, calls int, seed uint64) (*results.Result, *hdrhistogram.Histogram) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	h := results.NewHistogram()
	sum := 0.0
	for range calls {
		v := int64(50_000 + rng.ExpFloat64()*300_000) // ns
		h.RecordValue(v)
		sum += float64(v)
	}
	enc, err := results.EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	lat := results.LatencyOf(h, sum/float64(calls))
	cpu := 40.0
	started := time.Date(2026, 5, 1, 12, 0, 0, int(seed), time.UTC)
	r := &results.Result{
		Schema:   results.Schema,
		Env:      results.Env{Target: "10.0.0.1:8080", MeteorbenchVersion: "v1"},
		Settings: results.Settings{Protocols: []api.Protocol{api.GRPC}, Scenarios: []api.Scenario{api.Small}, Batches: []int{10}, Concurrency: []int{3}, Iterations: 30, Mode: results.ModeClosed, Repeat: 1, Segment: seg},
		Started:  started,
		Finished: started.Add(time.Second),
		Stop:     results.Stop{Reason: results.StopCompleted},
		Cells: []results.Cell{{
			CellKey: results.CellKey{Scenario: api.Small, Protocol: api.GRPC, Batch: 10, Condition: results.Condition{Concurrency: 3}},
			Mode:    results.ModeClosed, Calls: int64(calls), DurationS: 1, CallsPerS: float64(calls),
			LatencyUS: lat, Distribution: results.DistributionOf(h), Batches: int64(calls / 10),
			BatchMS:      results.Spread{Mean: 2, Stddev: 0.5},
			BytesPerCall: results.Bytes{Sent: 100, Received: 200}, ClientCPUUSPerCall: 10 + float64(seed), ServerCPUUSPerCall: &cpu,
			Histograms: &results.Histograms{Latency: enc},
		}},
	}
	return r, h
}

func seg(i, n int) *results.Segment { return &results.Segment{Index: i, Count: n} }

// The merged percentiles are exactly those of the union of the inputs'
// histograms: every figure and every point of the distribution.
func TestMergePercentilesExact(t *testing.T) {
	union := results.NewHistogram()
	var inputs []Input
	for i, n := range []int{1000, 2500, 40} {
		r, h := doc(t, seg(i+1, 3), n, uint64(i+1))
		if dropped := union.Merge(h); dropped != 0 {
			t.Fatal(dropped)
		}
		inputs = append(inputs, Input{Name: string(rune('a'+i)) + ".json", Result: r})
	}
	m, err := Merge(context.Background(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Cells[0]
	want := results.LatencyOf(union, c.LatencyUS.Mean*1e3)
	if c.LatencyUS != want {
		t.Errorf("merged latency %+v, union %+v", c.LatencyUS, want)
	}
	for _, q := range []float64{0, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 100} {
		h, err := results.DecodeHistogram(c.Histograms.Latency)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := h.ValueAtQuantile(q), union.ValueAtQuantile(q); a != b {
			t.Errorf("p%v: merged %d ns, union %d ns", q, a, b)
		}
	}
	wantDist := results.DistributionOf(union)
	for i := range wantDist {
		if c.Distribution[i] != wantDist[i] {
			t.Errorf("distribution point %d: %+v, union %+v", i, c.Distribution[i], wantDist[i])
		}
	}
	if c.Calls != 3540 || c.CallsPerS != 3540 || c.Batches != 354 {
		t.Errorf("calls %d, calls/s %v, batches %d: want the sums", c.Calls, c.CallsPerS, c.Batches)
	}
	// Client CPU per call: total CPU over total calls.
	wantCPU := (11*1000.0 + 12*2500 + 13*40) / 3540
	if d := c.ClientCPUUSPerCall - wantCPU; d > 1e-9 || d < -1e-9 {
		t.Errorf("client CPU/call %v, want %v", c.ClientCPUUSPerCall, wantCPU)
	}
	// Server CPU: one server, so the largest instance total over all calls.
	if s := *c.ServerCPUUSPerCall; s != 40.0*2500/3540 {
		t.Errorf("server CPU/call %v, want %v", s, 40.0*2500/3540)
	}
	if c.BytesPerCall != (results.Bytes{Sent: 100, Received: 200}) || c.BatchMS.Mean != 2 {
		t.Errorf("bytes %+v, batch %+v", c.BytesPerCall, c.BatchMS)
	}
	if m.Merged == nil || m.Merged.Segments != "segments 1, 2, 3 of 3" || len(m.Merged.Instances) != 3 || m.Settings.Segment != nil {
		t.Errorf("merged info %+v, settings segment %v", m.Merged, m.Settings.Segment)
	}
	// The verdicts are the merged cells', as analysis draws them.
	fresh := *m
	fresh.Verdicts, fresh.Crossovers = nil, nil
	analysis.Apply(&fresh)
	if len(m.Verdicts) == 0 || !reflect.DeepEqual(m.Verdicts, fresh.Verdicts) {
		t.Errorf("verdicts %+v, want those of the merged cells %+v", m.Verdicts, fresh.Verdicts)
	}
}

func TestMergeMissingSegment(t *testing.T) {
	a, _ := doc(t, seg(1, 3), 10, 1)
	c, _ := doc(t, seg(3, 3), 10, 3)
	m, err := Merge(context.Background(), []Input{{"a.json", a}, {"c.json", c}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Merged.Segments != "segments 1, 3 of 3 — segment 2 missing" || len(m.Merged.Missing) != 1 || m.Merged.Missing[0] != 2 {
		t.Errorf("segments %q, missing %v", m.Merged.Segments, m.Merged.Missing)
	}
	if len(m.Warnings) == 0 || !strings.Contains(m.Warnings[0], "segment 2 missing") || !strings.Contains(m.Warnings[0], "cover 2 of the 3 segments") {
		t.Errorf("warnings %q", m.Warnings)
	}
	// One segment alone (the other generators died) is the merged
	// document of its run, the others named missing.
	one, err := Merge(context.Background(), []Input{{"c.json", c}})
	if err != nil {
		t.Fatal(err)
	}
	if one.Merged.Segments != "segment 3 of 3 — segments 1, 2 missing" || len(one.Cells) != len(c.Cells) || one.Cells[0].Calls != c.Cells[0].Calls ||
		len(one.Warnings) == 0 || !strings.Contains(one.Warnings[0], "cover 1 of the 3 segments") {
		t.Errorf("segment 3 alone: %q, %d cells, warnings %q", one.Merged.Segments, len(one.Cells), one.Warnings)
	}
}

// Two whole runs of the plan from two machines: their loads are added.
func TestMergeWholeRuns(t *testing.T) {
	a, _ := doc(t, nil, 100, 1)
	b, _ := doc(t, nil, 300, 2)
	m, err := Merge(context.Background(), []Input{{"a.json", a}, {"b.json", b}})
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Cells[0]; c.Calls != 400 || c.CallsPerS != 400 {
		t.Errorf("calls %d, calls/s %v: want the loads added", c.Calls, c.CallsPerS)
	}
	if !strings.Contains(m.Merged.Segments, "2 whole runs") {
		t.Errorf("segments %q", m.Merged.Segments)
	}
}

func TestMergeRefuses(t *testing.T) {
	base := func(s *results.Segment, seed uint64) *results.Result { r, _ := doc(t, s, 10, seed); return r }
	otherRate := base(seg(2, 3), 2)
	otherRate.Settings.Rate = 300
	otherSchema := base(seg(2, 3), 2)
	otherSchema.Schema = "meteorbench/v2"
	noHist := base(seg(2, 3), 2)
	noHist.Cells[0].Histograms = nil
	negCalls := base(seg(2, 3), 2)
	negCalls.Cells[0].Calls = -3
	negConc := base(seg(2, 3), 2)
	negConc.Cells[0].Concurrency = -3
	fast1, fast2 := base(seg(1, 3), 1), base(seg(2, 3), 2)
	fast1.Cells[0].CallsPerS, fast2.Cells[0].CallsPerS = 0.6*results.MaxRate, 0.6*results.MaxRate
	// Cells whose calls sum past int64 (each plausible on its own): the
	// sum once wrapped to -9.2e18.
	huge := base(seg(2, 3), 2)
	for i := range 10_000 {
		c := huge.Cells[0]
		c.Batch, c.Calls, c.Histograms = 1000+i, results.MaxCount, nil
		huge.Cells = append(huge.Cells, c)
	}
	tests := []struct {
		name   string
		inputs []Input
		want   string
	}{
		{"one whole run", []Input{{"a.json", base(nil, 1)}}, "at least two"},
		{"no input", nil, "no documents"},
		{"the same run twice", []Input{{"a.json", base(seg(1, 3), 1)}, {"copy.json", base(seg(1, 3), 1)}}, "a.json and copy.json are the same run"},
		{"a segment twice", []Input{{"a.json", base(seg(1, 3), 1)}, {"b.json", base(seg(1, 3), 2)}}, "segment 1/3 given twice (a.json, b.json)"},
		{"overlapping segments", []Input{{"a.json", base(seg(1, 3), 1)}, {"b.json", base(seg(1, 2), 2)}}, "overlap"},
		{"segments and whole runs", []Input{{"a.json", base(seg(1, 3), 1)}, {"b.json", base(nil, 2)}}, "whole runs with whole runs"},
		{"another plan", []Input{{"a.json", base(seg(1, 3), 1)}, {"b.json", otherRate}}, "b.json is another plan than a.json: rate 300, not 0"},
		{"another schema", []Input{{"a.json", base(seg(1, 3), 1)}, {"b.json", otherSchema}}, `schema "meteorbench/v2"`},
		{"no histograms", []Input{{"a.json", base(seg(1, 3), 1)}, {"b.json", noHist}}, "no histograms"},
		{"negative calls", []Input{{"a.json", base(seg(1, 3), 1)}, {"b.json", negCalls}}, "merge: b.json: cells[0].calls: -3 is negative"},
		{"negative concurrency", []Input{{"a.json", base(seg(1, 3), 1)}, {"b.json", negConc}}, "merge: b.json: cells[0].concurrency: -3 is negative"},
		{"a sum out of bounds", []Input{{"a.json", fast1}, {"b.json", fast2}}, "merge: the merged document of a.json, b.json is out of bounds: cells[0].calls_per_s: 1.2e+09 is above the plausible maximum"},
		{"calls past int64", []Input{{"a.json", base(seg(1, 3), 1)}, {"b.json", huge}}, "merge: b.json: the calls of its cells: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Merge(context.Background(), tt.inputs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
