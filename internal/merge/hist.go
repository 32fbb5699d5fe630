package merge

import (
	"errors"
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meteorbench/meteorbench/internal/results"
)

// This file merges a cell's latency figures from the union of its parts'
// histograms.

// ErrNoHistograms is wrapped when a cell with calls keeps no histograms (a
// document from before they were kept): it cannot be merged exactly.
var ErrNoHistograms = errors.New("no histograms (a document from an older meteorbench?): cannot merge its percentiles exactly")

// mergeHist merges one histogram over the parts: the encoded union and the
// figure it gives (mean: the count-weighted mean of the parts' exact
// means); "" and nil when no part has it.
func mergeHist(ps []part, kind results.LatencyKind) (string, *results.Latency, error) {
	f := results.LatencyKinds[kind]
	var (
		sum      *hdrhistogram.Histogram
		weighted float64
	)
	for _, p := range ps {
		c := p.cell
		var enc string
		if c.Histograms != nil {
			enc = *f.Hist(c.Histograms)
		}
		l := f.Get(c)
		if enc == "" {
			if kind == results.KindLatency && c.Calls > 0 {
				return "", nil, fmt.Errorf("%s: %w", p.in.Name, ErrNoHistograms)
			}
			if l != nil && l.Max > 0 && kind != results.KindLatency {
				return "", nil, fmt.Errorf("%s: %w", p.in.Name, ErrNoHistograms)
			}
			continue
		}
		h, err := results.DecodeHistogram(enc)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", p.in.Name, err)
		}
		if sum == nil {
			sum = results.NewHistogram()
		}
		if dropped := sum.Merge(h); dropped != 0 {
			return "", nil, fmt.Errorf("%s: %d values dropped merging its histogram", p.in.Name, dropped)
		}
		mean := h.Mean()
		if l != nil {
			mean = l.Mean * 1e3
		}
		weighted += mean * float64(h.TotalCount())
	}
	if sum == nil || sum.TotalCount() == 0 {
		return "", nil, nil
	}
	l := results.LatencyOf(sum, weighted/float64(sum.TotalCount()))
	enc, err := results.EncodeHistogram(sum)
	if err != nil {
		return "", nil, err
	}
	return enc, &l, nil
}
