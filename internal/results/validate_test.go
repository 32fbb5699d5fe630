package results

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The report fixtures are real documents: every one loads and validates.
func TestLoadFixtures(t *testing.T) {
	paths, _ := filepath.Glob("../report/testdata/*.json")
	if len(paths) == 0 {
		t.Fatal("no fixtures")
	}
	for _, p := range paths {
		if _, err := Load(context.Background(), p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// doc is a small valid document whose cell has histograms.
func doc(t *testing.T) *Result {
	t.Helper()
	h := NewHistogram()
	for _, v := range []int64{1000, 2000, 3000} {
		h.RecordValue(v)
	}
	enc, err := EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	return &Result{Schema: Schema, Settings: Settings{Batches: []int{1}, Concurrency: []int{2}, Repeat: 1},
		Cells: []Cell{{CellKey: CellKey{Scenario: "small", Protocol: "rest", Batch: 1, Condition: Condition{Concurrency: 2}},
			Calls: 3, CallsPerS: 100, LatencyUS: LatencyOf(h, math.NaN()), Histograms: &Histograms{Latency: enc}}}}
}

// Each bad value is refused with the JSON path of the first one and what is
// wrong with it.
func TestValidate(t *testing.T) {
	if err := Validate(doc(t)); err != nil {
		t.Fatalf("valid document: %v", err)
	}
	other := hdrhistogram.New(1, 1000, 2)
	other.RecordValue(5)
	otherEnc, _ := EncodeHistogram(other)
	for _, tt := range []struct {
		name  string
		spoil func(r *Result)
		want  string
	}{
		{"negative latency", func(r *Result) { r.Cells[0].LatencyUS.P99 = -5 }, "cells[0].latency_us.p99: -5 is negative"},
		{"NaN rate", func(r *Result) { r.Cells[0].CallsPerS = math.NaN() }, "cells[0].calls_per_s: NaN is not a finite number"},
		{"infinite bytes", func(r *Result) { r.Cells[0].BytesPerCall.Sent = math.Inf(1) }, "cells[0].bytes_per_call.sent: +Inf is not a finite number"},
		{"negative calls", func(r *Result) { r.Cells[0].Calls = -3 }, "cells[0].calls: -3 is negative"},
		{"negative concurrency", func(r *Result) { r.Cells[0].Concurrency = -3 }, "cells[0].concurrency: -3 is negative"},
		{"zero concurrency", func(r *Result) { r.Cells[0].Concurrency = 0 }, "cells[0].concurrency: 0: must be at least 1"},
		{"settings concurrency", func(r *Result) { r.Settings.Concurrency = []int{1, -2} }, "settings.concurrency[1]: -2 is negative"},
		{"implausible latency", func(r *Result) { r.Cells[0].LatencyUS.Max = 1e300 }, "cells[0].latency_us.max: 1e+300 is above the plausible maximum"},
		{"quantile above 1", func(r *Result) { r.Cells[0].Distribution = []Quantile{{Q: 1.5, US: 3}} }, "cells[0].distribution[0].q: 1.5 is above"},
		{"negative error class", func(r *Result) { r.Cells[0].ErrorClasses = ErrorCounts{"timeout": -1} }, "cells[0].error_classes.timeout: -1 is negative"},
		{"bottleneck reason without the flag", func(r *Result) { r.Cells[0].GeneratorBottleneckReason = "cores" }, "cells[0].generator_bottleneck_reason: \"cores\" without generator_bottleneck"},
		{"histogram count", func(r *Result) { r.Cells[0].Calls = 4 }, "cells[0].histograms.latency: holds 3 values, the cell 4 calls"},
		{"a breakdown histogram of one value per call", func(r *Result) { r.Cells[0].Histograms.Decode = r.Cells[0].Histograms.Latency; r.Cells[0].Calls = 3 }, ""},
		{"histogram not base64", func(r *Result) { r.Cells[0].Histograms.Latency = "HISTFAAA%%%" }, "cells[0].histograms.latency: results: decode histogram"},
		{"histogram of another geometry", func(r *Result) { r.Cells[0].Histograms.Latency = otherEnc }, "histogram of 1..1000 ns with 2 digits"},
		{"capacity probe", func(r *Result) {
			r.Capacity = []Capacity{{CapacitySearch: CapacitySearch{Probes: []CapacityProbe{{Offered: 10}, {Offered: -1}}}}}
		}, "capacity[0].probes[1].offered: -1 is negative"},
		{"capacity search probe", func(r *Result) {
			r.Capacity = []Capacity{{Searches: []CapacitySearch{{}, {Probes: []CapacityProbe{{Offered: -2}}}}}}
		}, "capacity[0].searches[1].probes[0].offered: -2 is negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := doc(t)
			tt.spoil(r)
			err := Validate(r)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ie *InvalidError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want an InvalidError containing %q", err, tt.want)
			}
		})
	}
}

// A forged histogram header asking for a huge counts array is refused
// before anything is allocated for it.
func TestDecodeHistogramForgedGeometry(t *testing.T) {
	wide := hdrhistogram.New(1, math.MaxInt64/2, 5)
	wide.RecordValue(7)
	enc, err := wide.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	wide = nil
	var before, after runtimeMem
	before.read()
	_, err = DecodeHistogram(string(enc))
	after.read()
	if err == nil || !strings.Contains(err.Error(), "want 100..3600000000000 ns with 3") {
		t.Fatalf("error %v", err)
	}
	if grew := after.total - before.total; grew > 1<<20 {
		t.Errorf("refusing it allocated %d bytes", grew)
	}
}

func writeDoc(t *testing.T, r *Result) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, r); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "run1.json")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Load names the file and the path of the bad value.
func TestLoadNamesFileAndPath(t *testing.T) {
	r := doc(t)
	r.Cells[0].LatencyUS.P99 = -5
	p := writeDoc(t, r)
	_, err := Load(context.Background(), p)
	if err == nil || err.Error() != p+": cells[0].latency_us.p99: -5 is negative" {
		t.Fatalf("error %v", err)
	}
}

// A document over the size limit is refused from its size alone (a sparse
// file: nothing is read), and a stream over it after MaxDocumentSize bytes.
func TestLoadTooLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "huge.json")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(200 << 20)
	f.Close()
	_, err = Load(context.Background(), p)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "huge.json: 200 MiB: larger than 64 MiB") {
		t.Fatalf("error %v", err)
	}
	_, err = ReadLimited(context.Background(), io0{})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("endless stream: %v", err)
	}
}

// io0 is an endless stream of spaces.
type io0 struct{}

func (io0) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// A document of a few hundred thousand tiny repeats (each a map in
// memory) is refused before decoding: that shape took 24 times its size.
func TestLoadMapBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"schema":"meteorbench/v1","cells":[{"scenario":"small","protocol":"rest","batch":1,"concurrency":1,"repeats":[`)
	for i := range maxMaps + 1 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{}`)
	}
	b.WriteString(`]}]}`)
	_, err := ReadLimited(context.Background(), strings.NewReader(b.String()))
	var nr *NotResultError
	if !errors.As(err, &nr) || !strings.Contains(err.Error(), "more than 262144") {
		t.Fatalf("error %v", err)
	}
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	if _, err := ReadLimited(context.Background(), strings.NewReader(deep)); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Fatalf("deep: %v", err)
	}
}

// A cancelled context stops the read.
func TestLoadCancelled(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("stop")
	cancel(cause)
	start := time.Now()
	if _, err := ReadLimited(ctx, io0{}); !errors.Is(err, cause) {
		t.Fatalf("error %v, want the cause", err)
	}
	if time.Since(start) > time.Second {
		t.Error("slow to stop")
	}
}

// Summing counts past int64 is an error, not a wrap.
func TestAddCountsChecked(t *testing.T) {
	m := Cell{Calls: math.MaxInt64 - 1}
	if err := m.AddCountsChecked(&Cell{Calls: 2}); !errors.Is(err, ErrOverflow) || !strings.Contains(err.Error(), "calls") {
		t.Fatalf("error %v", err)
	}
	if m.Calls != math.MaxInt64-1 {
		t.Errorf("calls changed to %d on a refused add", m.Calls)
	}
	m = Cell{ErrorClasses: ErrorCounts{"timeout": math.MaxInt64}}
	if err := m.AddCountsChecked(&Cell{ErrorClasses: ErrorCounts{"timeout": 1}}); !errors.Is(err, ErrOverflow) {
		t.Fatalf("error classes: %v", err)
	}
	if s, err := AddInt64(-5, 3); s != -2 || err != nil {
		t.Errorf("AddInt64(-5, 3) = %d, %v", s, err)
	}
}

// runtimeMem reads the bytes allocated so far.
type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.total = s.TotalAlloc
}
