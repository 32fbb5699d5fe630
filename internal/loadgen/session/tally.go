package session

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
	class    results.ErrorClass // set when err != nil
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
	classCancelled = results.ClassCancelled
	classAbandoned = results.ClassAbandoned
)

// tally is an aggregate of calls; its size does not depend on their number.
// Workers share a few tallies, each under its own lock (see shard).
type tally struct {
	// h holds the successful calls' histograms by kind: latency (open
	// loop: from the intended start), always; uncorrected (from the send),
	// open loop only; first record, last byte and decode, lazily made when
	// the adapter reports them. A tally has no TLS handshakes (the
	// dialer's). sum is the exact sum beside each, in nanoseconds.
	h   hists
	sum [results.NumLatencyKinds]float64
	// handoff: open loop, every sent call's hand-off (record.handoff).
	handoff *hdrhistogram.Histogram
	// errSum is the time failed calls took (abandoned ones included), in
	// nanoseconds, for Little's law.
	errSum float64

	calls, errors int64
	classes       results.ErrorCounts
	examples      map[results.ErrorClass]string // the first error message of each class
	cancelled     int64                         // dropped: the run was interrupted
	abandoned     int64                         // of the errors, still running at the cell's hard end
	late          int64                         // open-loop: sent more than plan.LateThreshold after due
	lateWoken     int64                         // of those, claimed in time by a free worker that woke late
	busy          time.Duration
	batch         results.Welford // time per batch of successful calls, ns
}

func newTally(open bool) *tally {
	t := &tally{classes: results.ErrorCounts{}}
	t.h[results.KindLatency] = newHist()
	if open {
		t.h[results.KindUncorrected], t.handoff = newHist(), newHist()
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
				t.examples = map[results.ErrorClass]string{}
			}
			t.examples[r.class] = message(r.err, r.class)
		}
		return
	}
	t.calls++
	t.record(results.KindLatency, r.end.Sub(r.intended))
	if t.h[results.KindUncorrected] != nil {
		t.record(results.KindUncorrected, took)
	}
	if f := r.out.FirstRecord; f > 0 {
		t.record(results.KindFirstRecord, f)
	}
	if lb := r.out.LastByte; lb > 0 {
		t.record(results.KindLastByte, lb)
		t.record(results.KindDecode, r.out.Decode)
	}
}

// record adds d to kind k's histogram (made on first use) and sum.
func (t *tally) record(k results.LatencyKind, d time.Duration) {
	if t.h[k] == nil {
		t.h[k] = newHist()
	}
	recordDuration(t.h[k], d)
	t.sum[k] += float64(d)
}

// message is an error's text without its class: a call.Error of the class
// gives its cause ("record 3: id 7, want 12", not "invalid-response: ...").
func message(err error, class results.ErrorClass) string {
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
	mergeHists(&t.h, &o.h)
	for k := range t.sum {
		t.sum[k] += o.sum[k]
	}
	if t.handoff != nil && o.handoff != nil {
		t.handoff.Merge(o.handoff)
	}
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

// hists are a measurement's histograms by kind, kept raw until the
// repeats of a cell are merged and encoded into results.Histograms.
type hists [results.NumLatencyKinds]*hdrhistogram.Histogram

func (t *tally) hists() hists { return t.h }

// add merges o into h (the histograms of all repeats together).
func (h *hists) add(o hists) { mergeHists(h, &o) }

// mergeHists merges every histogram of src into dst's, making those dst
// lacks. One geometry everywhere: nothing is dropped.
func mergeHists(dst, src *hists) {
	for k, s := range src {
		if s == nil {
			continue
		}
		if dst[k] == nil {
			dst[k] = newHist()
		}
		dst[k].Merge(s)
	}
}

// encode is the histograms as the document keeps them; nil when empty.
func (h hists) encode() (*results.Histograms, error) {
	var out results.Histograms
	for k, info := range results.LatencyKinds {
		enc, err := results.EncodeHistogram(h[k])
		if err != nil {
			return nil, err
		}
		*info.Hist(&out) = enc
	}
	if out == (results.Histograms{}) {
		return nil, nil
	}
	return &out, nil
}
