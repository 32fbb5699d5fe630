package loadgen

import (
	"errors"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Histogram geometry: the documents' (results.HistLowestNS...): nanoseconds,
// 3 significant digits, from 100 ns up to an hour (longer values are
// clamped). About 200 KB each in memory, whatever the number of calls.
const histHighest = results.HistHighestNS

func newHist() *hdrhistogram.Histogram { return results.NewHistogram() }

func recordDuration(h *hdrhistogram.Histogram, d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	if v > histHighest {
		v = histHighest
	}
	h.RecordValue(v) // in range by construction
}

// record is one call, filled on every exit path (see worker.one).
type record struct {
	intended time.Time // when the call was due (open-loop); = start in closed-loop
	start    time.Time // when it was sent
	end      time.Time
	out      call.Outcome
	err      error
	class    string // set when err != nil
	// Open loop: the time from the dispatcher's wake-up for the call to its
	// send (the hand-off to a free worker), and whether the call started
	// more than LateThreshold after it was due (lateWoken: because the
	// dispatcher itself woke late).
	handoff         time.Duration
	late, lateWoken bool
}

// classCancelled is the class the engine drops rather than counts as an
// error: the run was interrupted. A call still running at the cell's hard
// end is an error of class results.ClassAbandoned: the target stalled it.
const (
	classCancelled = call.ClassCancelled
	classAbandoned = results.ClassAbandoned
)

// tally is an aggregate of calls; its size does not depend on their number.
// Workers share a few tallies, each under its own lock (see shard).
type tally struct {
	lat   *hdrhistogram.Histogram // successes; open-loop: from the intended start
	unc   *hdrhistogram.Histogram // successes, from the send; open-loop only
	first *hdrhistogram.Histogram // time to first record; lazily made
	// Time to the last byte and decode time, when the adapter reports them;
	// lazily made.
	lastByte, decode *hdrhistogram.Histogram
	// handoff: open loop, every sent call's hand-off (record.handoff).
	handoff *hdrhistogram.Histogram
	// Exact sums beside the histograms, in nanoseconds; errSum is the time
	// failed calls took (abandoned ones included), for Little's law.
	latSum, uncSum, firstSum, lastByteSum, decodeSum, errSum float64

	calls, errors int64
	classes       map[string]int64
	examples      map[string]string // the first error message of each class
	cancelled     int64             // dropped: the run was interrupted
	abandoned     int64             // of the errors, still running at the cell's hard end
	late          int64             // open-loop: sent more than LateThreshold after due
	lateWoken     int64             // of those, claimed in time by a free worker that woke late
	busy          time.Duration
	batch         results.Welford // time per batch of successful calls, ns
}

func newTally(open bool) *tally {
	t := &tally{lat: newHist(), classes: map[string]int64{}}
	if open {
		t.unc, t.handoff = newHist(), newHist()
	}
	return t
}

// add accounts one call.
func (t *tally) add(r *record) {
	if r.class == classCancelled {
		t.cancelled++
		return
	}
	if r.late {
		t.late++
	}
	if r.lateWoken {
		t.lateWoken++
	}
	if t.handoff != nil {
		recordDuration(t.handoff, r.handoff)
	}
	took := r.end.Sub(r.start)
	t.busy += took
	if r.class != "" {
		t.errors++
		t.errSum += float64(took)
		if r.class == classAbandoned {
			t.abandoned++
		}
		t.classes[r.class]++
		if _, ok := t.examples[r.class]; !ok {
			if t.examples == nil {
				t.examples = map[string]string{}
			}
			t.examples[r.class] = message(r.err, r.class)
		}
		return
	}
	t.calls++
	lat := r.end.Sub(r.intended)
	recordDuration(t.lat, lat)
	t.latSum += float64(lat)
	if t.unc != nil {
		recordDuration(t.unc, took)
		t.uncSum += float64(took)
	}
	if f := r.out.FirstRecord; f > 0 {
		if t.first == nil {
			t.first = newHist()
		}
		recordDuration(t.first, f)
		t.firstSum += float64(f)
	}
	if lb := r.out.LastByte; lb > 0 {
		if t.lastByte == nil {
			t.lastByte, t.decode = newHist(), newHist()
		}
		recordDuration(t.lastByte, lb)
		t.lastByteSum += float64(lb)
		recordDuration(t.decode, r.out.Decode)
		t.decodeSum += float64(r.out.Decode)
	}
}

// message is an error's text without its class: a call.Error of the class
// gives its cause ("record 3: id 7, want 12", not "invalid-response: ...").
func message(err error, class string) string {
	if err == nil {
		return ""
	}
	var ce *call.Error
	if errors.As(err, &ce) && ce.Class == class && ce.Err != nil {
		return ce.Err.Error()
	}
	return err.Error()
}

// shard is a tally that several workers share under a lock. A tally per
// worker held some 200 KB per histogram, four histograms in open loop: 800
// MB for 1,024 workers, allocated and zeroed inside the measured window and
// merged after it, which cost the generator more CPU per call than the
// calls. A few shards keep the memory bounded whatever the worker count,
// and the lock, taken once per call, is rarely contended.
type shard struct {
	mu sync.Mutex
	t  *tally
}

// add accounts one call.
func (s *shard) add(r *record) {
	s.mu.Lock()
	s.t.add(r)
	s.mu.Unlock()
}

// addBatch accounts the time of one batch of successful calls.
func (s *shard) addBatch(d time.Duration) {
	s.mu.Lock()
	s.t.batch.Add(float64(d))
	s.mu.Unlock()
}

// maxShards bounds the tallies of a phase: no more than a handful of
// workers run at once on the generator's cores, so a few locks are enough.
const maxShards = 8

// newShards makes the tallies of a phase of n workers.
func newShards(n int, open bool) []*shard {
	out := make([]*shard, min(max(n, 1), maxShards))
	for i := range out {
		out[i] = &shard{t: newTally(open)}
	}
	return out
}

// merge adds o into t.
func (t *tally) merge(o *tally) {
	t.lat.Merge(o.lat)
	if t.unc != nil && o.unc != nil {
		t.unc.Merge(o.unc)
	}
	if t.handoff != nil && o.handoff != nil {
		t.handoff.Merge(o.handoff)
	}
	if o.first != nil {
		if t.first == nil {
			t.first = newHist()
		}
		t.first.Merge(o.first)
	}
	if o.lastByte != nil {
		if t.lastByte == nil {
			t.lastByte, t.decode = newHist(), newHist()
		}
		t.lastByte.Merge(o.lastByte)
		t.decode.Merge(o.decode)
	}
	t.latSum += o.latSum
	t.uncSum += o.uncSum
	t.firstSum += o.firstSum
	t.lastByteSum += o.lastByteSum
	t.decodeSum += o.decodeSum
	t.errSum += o.errSum
	t.calls += o.calls
	t.errors += o.errors
	results.AddClasses(&t.classes, o.classes)
	results.AddExamples(&t.examples, o.examples)
	t.cancelled += o.cancelled
	t.abandoned += o.abandoned
	t.late += o.late
	t.lateWoken += o.lateWoken
	t.busy += o.busy
	t.batch.Merge(o.batch)
}

// distributionQuantiles is the fixed grid of Cell.Distribution.
var distributionQuantiles = results.DistributionQuantiles

// latency summarises a histogram in microseconds; mean is exact (sum/n).
func latency(h *hdrhistogram.Histogram, sumNS float64) results.Latency {
	n := h.TotalCount()
	if n == 0 {
		return results.Latency{}
	}
	return results.LatencyOf(h, sumNS/float64(n))
}

// distribution is the percentile curve of h on the fixed grid.
func distribution(h *hdrhistogram.Histogram) []results.Quantile {
	return results.DistributionOf(h)
}

// hists are a measurement's histograms, kept raw until the repeats of a
// cell are merged and encoded into results.Histograms.
type hists struct {
	lat, unc, first, lastByte, decode, tls *hdrhistogram.Histogram
}

func (t *tally) hists() hists {
	return hists{lat: t.lat, unc: t.unc, first: t.first, lastByte: t.lastByte, decode: t.decode}
}

// add merges o into h (the histograms of all repeats together).
func (h *hists) add(o hists) {
	for _, p := range []struct{ dst, src **hdrhistogram.Histogram }{
		{&h.lat, &o.lat}, {&h.unc, &o.unc}, {&h.first, &o.first},
		{&h.lastByte, &o.lastByte}, {&h.decode, &o.decode}, {&h.tls, &o.tls},
	} {
		if *p.src == nil {
			continue
		}
		if *p.dst == nil {
			*p.dst = newHist()
		}
		(*p.dst).Merge(*p.src) // one geometry: nothing is dropped
	}
}

// encode is the histograms as the document keeps them; nil when empty.
func (h hists) encode() (*results.Histograms, error) {
	var out results.Histograms
	var err error
	for _, p := range []struct {
		dst *string
		src *hdrhistogram.Histogram
	}{
		{&out.Latency, h.lat}, {&out.Uncorrected, h.unc}, {&out.FirstRecord, h.first},
		{&out.LastByte, h.lastByte}, {&out.Decode, h.decode}, {&out.TLSHandshake, h.tls},
	} {
		if *p.dst, err = results.EncodeHistogram(p.src); err != nil {
			return nil, err
		}
	}
	if out == (results.Histograms{}) {
		return nil, nil
	}
	return &out, nil
}
