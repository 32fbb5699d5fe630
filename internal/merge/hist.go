package merge

import (
	"errors"
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meteorbench/meteorbench/internal/results"
)

// This file merges a cell's latency figures from the union of its parts'
// histograms.

// latencyField is one histogram of a cell and the figure it gives.
type latencyField struct {
	name string
	enc  func(*results.Histograms) *string
	get  func(*results.Cell) *results.Latency
	set  func(*results.Cell, *results.Latency)
}

var latencyFields = []latencyField{
	{"latency", func(h *results.Histograms) *string { return &h.Latency },
		func(c *results.Cell) *results.Latency { return &c.LatencyUS },
		func(c *results.Cell, l *results.Latency) {
			if l != nil {
				c.LatencyUS = *l
			}
		}},
	optionalLatency("uncorrected", func(h *results.Histograms) *string { return &h.Uncorrected }, func(c *results.Cell) **results.Latency { return &c.LatencyUncorrectedUS }),
	optionalLatency("first_record", func(h *results.Histograms) *string { return &h.FirstRecord }, func(c *results.Cell) **results.Latency { return &c.FirstRecordUS }),
	optionalLatency("last_byte", func(h *results.Histograms) *string { return &h.LastByte }, func(c *results.Cell) **results.Latency { return &c.LastByteUS }),
	optionalLatency("decode", func(h *results.Histograms) *string { return &h.Decode }, func(c *results.Cell) **results.Latency { return &c.DecodeUS }),
	optionalLatency("tls_handshake", func(h *results.Histograms) *string { return &h.TLSHandshake }, func(c *results.Cell) **results.Latency { return &c.TLSHandshakeUS }),
}

// optionalLatency is the latencyField of a figure a cell may lack (a
// *Latency field, nil when absent): get and set both go through field.
func optionalLatency(name string, enc func(*results.Histograms) *string, field func(*results.Cell) **results.Latency) latencyField {
	return latencyField{name, enc,
		func(c *results.Cell) *results.Latency { return *field(c) },
		func(c *results.Cell, l *results.Latency) { *field(c) = l }}
}

// ErrNoHistograms is wrapped when a cell with calls keeps no histograms (a
// document from before they were kept): it cannot be merged exactly.
var ErrNoHistograms = errors.New("no histograms (a document from an older meteorbench?): cannot merge its percentiles exactly")

// mergeHist merges one histogram over the parts: the encoded union and the
// figure it gives (mean: the count-weighted mean of the parts' exact
// means); "" and nil when no part has it.
func mergeHist(ps []part, f latencyField) (string, *results.Latency, error) {
	var (
		sum      *hdrhistogram.Histogram
		weighted float64
	)
	for _, p := range ps {
		c := p.cell
		var enc string
		if c.Histograms != nil {
			enc = *f.enc(c.Histograms)
		}
		l := f.get(c)
		if enc == "" {
			if f.name == "latency" && c.Calls > 0 {
				return "", nil, fmt.Errorf("%s: %w", p.in.Name, ErrNoHistograms)
			}
			if l != nil && l.Max > 0 && f.name != "latency" {
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
