package engine

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
	Handoff         time.Duration
	Late, LateWoken bool
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
type Tally struct {
	// h holds the successful calls' histograms by kind: latency (open
	// loop: from the intended start), always; uncorrected (from the send),
	// open loop only; first record, last byte and decode, lazily made when
	// the adapter reports them. A tally has no TLS handshakes (the
	// dialer's). sum is the exact sum beside each, in nanoseconds.
	H   Hists
	Sum [results.NumLatencyKinds]float64
	// handoff: open loop, every sent call's hand-off (record.handoff).
	Handoff *hdrhistogram.Histogram
	// errSum is the time failed calls took (abandoned ones included), in
	// nanoseconds, for Little's law.
	ErrSum float64

	Calls, Errors int64
	Classes       results.ErrorCounts
	Examples      map[results.ErrorClass]string // the first error message of each class
	Cancelled     int64                         // dropped: the run was interrupted
	Abandoned     int64                         // of the errors, still running at the cell's hard end
	Late          int64                         // open-loop: sent more than engine.LateThreshold after due
	LateWoken     int64                         // of those, claimed in time by a free worker that woke late
	Busy          time.Duration
	Batch         results.Welford // time per batch of successful calls, ns
}

func NewTally(open bool) *Tally {
	t := &Tally{Classes: results.ErrorCounts{}}
	t.H[results.KindLatency] = newHist()
	if open {
		t.H[results.KindUncorrected], t.Handoff = newHist(), newHist()
	}
	return t
}

// add accounts one call.
func (t *Tally) add(r *record) {
	if r.class == classCancelled {
		t.Cancelled++
		return
	}
	if r.Late {
		t.Late++
	}
	if r.LateWoken {
		t.LateWoken++
	}
	if t.Handoff != nil {
		recordDuration(t.Handoff, r.Handoff)
	}
	took := r.end.Sub(r.start)
	t.Busy += took
	if r.class != "" {
		t.Errors++
		t.ErrSum += float64(took)
		if r.class == classAbandoned {
			t.Abandoned++
		}
		t.Classes[r.class]++
		if _, ok := t.Examples[r.class]; !ok {
			if t.Examples == nil {
				t.Examples = map[results.ErrorClass]string{}
			}
			t.Examples[r.class] = message(r.err, r.class)
		}
		return
	}
	t.Calls++
	lat, unc := r.end.Sub(r.intended)-r.out.Setup, took-r.out.Setup
	if !r.out.Sent.IsZero() {
		lat = r.end.Sub(r.out.Sent) // the feed: from the server's stamp
		unc = lat
	}
	if r.out.Setup > 0 {
		t.record(results.KindStreamSetup, r.out.Setup)
	}
	t.record(results.KindLatency, lat)
	if t.H[results.KindUncorrected] != nil {
		t.record(results.KindUncorrected, unc)
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
func (t *Tally) record(k results.LatencyKind, d time.Duration) {
	if t.H[k] == nil {
		t.H[k] = newHist()
	}
	recordDuration(t.H[k], d)
	t.Sum[k] += float64(d)
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
	mu    sync.Mutex
	Tally *Tally
}

// add accounts one call.
func (s *shard) add(r *record) {
	s.mu.Lock()
	s.Tally.add(r)
	s.mu.Unlock()
}

// addBatch accounts the time of one batch of successful calls.
func (s *shard) addBatch(d time.Duration) {
	s.mu.Lock()
	s.Tally.Batch.Add(float64(d))
	s.mu.Unlock()
}

// maxShards bounds the tallies of a phase: no more than a handful of
// workers run at once on the generator's cores, so a few locks are enough.
const maxShards = 8

// newShards makes the tallies of a phase of n workers.
func newShards(n int, open bool) []*shard {
	out := make([]*shard, min(max(n, 1), maxShards))
	for i := range out {
		out[i] = &shard{Tally: NewTally(open)}
	}
	return out
}

// merge adds o into t.
func (t *Tally) merge(o *Tally) {
	MergeHists(&t.H, &o.H)
	for k := range t.Sum {
		t.Sum[k] += o.Sum[k]
	}
	if t.Handoff != nil && o.Handoff != nil {
		t.Handoff.Merge(o.Handoff)
	}
	t.ErrSum += o.ErrSum
	t.Calls += o.Calls
	t.Errors += o.Errors
	results.AddClasses(&t.Classes, o.Classes)
	results.AddExamples(&t.Examples, o.Examples)
	t.Cancelled += o.Cancelled
	t.Abandoned += o.Abandoned
	t.Late += o.Late
	t.LateWoken += o.LateWoken
	t.Busy += o.Busy
	t.Batch.Merge(o.Batch)
}

// DistributionQuantiles is the fixed grid of Cell.Distribution.
var DistributionQuantiles = results.DistributionQuantiles

// latency summarises a histogram in microseconds; mean is exact (sum/n).
func Latency(h *hdrhistogram.Histogram, sumNS float64) results.Latency {
	n := h.TotalCount()
	if n == 0 {
		return results.Latency{}
	}
	return results.LatencyOf(h, sumNS/float64(n))
}

// distribution is the percentile curve of h on the fixed grid.
func Distribution(h *hdrhistogram.Histogram) []results.Quantile {
	return results.DistributionOf(h)
}

// hists are a measurement's histograms by kind, kept raw until the
// repeats of a cell are merged and encoded into results.Histograms.
type Hists [results.NumLatencyKinds]*hdrhistogram.Histogram

func (t *Tally) Hists() Hists { return t.H }

// add merges o into h (the histograms of all repeats together).
func (h *Hists) Add(o Hists) { MergeHists(h, &o) }

// MergeHists merges every histogram of src into dst's, making those dst
// lacks. One geometry everywhere: nothing is dropped.
func MergeHists(dst, src *Hists) {
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
func (h Hists) Encode() (*results.Histograms, error) {
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
