package results

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The one histogram geometry of every latency histogram the load generator
// keeps and every Histograms string a document holds: values in
// nanoseconds, from HistLowestNS (100 ns) to HistHighestNS (an hour; longer
// values are clamped to it), HistDigits (3) significant decimal digits.
// Histograms of one geometry merge without loss; DecodeHistogram refuses
// any other, so a merge never drops a value (hdrhistogram's Merge silently
// drops values above the receiver's highest trackable value).
const (
	HistLowestNS  = 100
	HistHighestNS = int64(time.Hour)
	HistDigits    = 3
)

// NewHistogram makes an empty histogram of the documents' geometry.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(HistLowestNS, HistHighestNS, HistDigits)
}

// Histograms are a cell's latency histograms, kept losslessly so that cells
// measured by several load generators merge exactly (`meteorbench merge`):
// each is HdrHistogram's V2 compressed encoding (base64 text, the
// "HISTFAAA..." form that hdrhistogram-go, Java and C read) of a histogram
// of the geometry above, in nanoseconds. A repeated cell's histograms are
// those of all its repeats together. Empty when the cell has no such
// figure (no successful call, no stream, no TLS...).
type Histograms struct {
	Latency     string `json:"latency,omitempty"`      // LatencyUS
	Uncorrected string `json:"uncorrected,omitempty"`  // LatencyUncorrectedUS (open loop)
	FirstRecord string `json:"first_record,omitempty"` // FirstRecordUS
	LastByte    string `json:"last_byte,omitempty"`    // LastByteUS
	Decode      string `json:"decode,omitempty"`       // DecodeUS
	// TLSHandshake counts one value per connection, not per call.
	TLSHandshake string `json:"tls_handshake,omitempty"` // TLSHandshakeUS
	// StreamSetup counts one value per stream (stream scenarios).
	StreamSetup string `json:"stream_setup,omitempty"` // StreamSetupUS
}

// EncodeHistogram is h in the V2 compressed encoding, as base64 text; ""
// for a nil or empty histogram.
func EncodeHistogram(h *hdrhistogram.Histogram) (string, error) {
	if h == nil || h.TotalCount() == 0 {
		return "", nil
	}
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("results: encode histogram: %w", err)
	}
	return string(b), nil
}

// DecodeHistogram reads EncodeHistogram's text; nil for "". A histogram of
// another geometry is refused: merging it could lose values.
func DecodeHistogram(s string) (*hdrhistogram.Histogram, error) {
	if s == "" {
		return nil, nil
	}
	if err := checkGeometry(s); err != nil {
		return nil, fmt.Errorf("results: decode histogram: %w", err)
	}
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("results: decode histogram: %w", err)
	}
	if h.LowestTrackableValue() != HistLowestNS || h.HighestTrackableValue() != HistHighestNS || h.SignificantFigures() != HistDigits {
		return nil, fmt.Errorf("results: histogram of %d..%d ns with %d digits, want %d..%d ns with %d",
			h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures(), HistLowestNS, HistHighestNS, HistDigits)
	}
	return h, nil
}

// LatencyOf summarises a histogram of nanoseconds in microseconds. The
// percentiles and the maximum are the histogram's; the mean is meanNS
// (the exact mean kept beside it), or the histogram's when meanNS is NaN.
func LatencyOf(h *hdrhistogram.Histogram, meanNS float64) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	if math.IsNaN(meanNS) {
		meanNS = h.Mean()
	}
	us := func(v int64) float64 { return float64(v) / 1e3 }
	return Latency{
		P50:  us(h.ValueAtQuantile(50)),
		P90:  us(h.ValueAtQuantile(90)),
		P99:  us(h.ValueAtQuantile(99)),
		P999: us(h.ValueAtQuantile(99.9)),
		Max:  us(h.Max()),
		Mean: meanNS / 1e3,
	}
}

// DistributionQuantiles is the fixed grid of Cell.Distribution: halving the
// distance to 1 every two points (0, 0.29, 0.5, 0.65, 0.75, ... 0.99999),
// then 1 (the maximum). A fixed grid lets repeats be merged point by point.
var DistributionQuantiles = func() []float64 {
	var qs []float64
	for i := 0; ; i++ {
		q := 1 - math.Pow(2, -float64(i)/2)
		if q > 0.99999 {
			break
		}
		qs = append(qs, q)
	}
	return append(qs, 1)
}()

// DistributionOf is the percentile curve of h on the fixed grid; nil for an
// empty histogram.
func DistributionOf(h *hdrhistogram.Histogram) []Quantile {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	out := make([]Quantile, len(DistributionQuantiles))
	for i, q := range DistributionQuantiles {
		v := h.ValueAtQuantile(q * 100)
		if q == 1 {
			v = h.Max()
		}
		out[i] = Quantile{Q: q, US: float64(v) / 1e3}
	}
	return out
}

// checkGeometry reads the geometry in the header of a V2 compressed
// histogram and refuses any other than the documents' before
// hdrhistogram.Decode allocates the counts array the header asks for (a
// forged 1..2^62 at 5 digits is tens of MB per histogram). It decodes only
// the first bytes of the base64 text and inflates only the 40-byte header.
func checkGeometry(s string) error {
	// 8 bytes (cookie, length) and the start of the zlib stream: 256
	// base64 characters are 192 bytes, more than the header needs.
	head := s[:min(len(s), 256)]
	head = head[:len(head)/4*4]
	raw, err := base64.StdEncoding.DecodeString(head)
	if err != nil || len(raw) < 8 {
		return errors.New("not a base64 V2 compressed histogram")
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		return fmt.Errorf("not a V2 compressed histogram: %w", err)
	}
	var hdr [40]byte
	if _, err := io.ReadFull(z, hdr[:]); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("histogram header: %w", err)
	}
	digits := int32(binary.BigEndian.Uint32(hdr[12:16]))
	lowest := int64(binary.BigEndian.Uint64(hdr[16:24]))
	highest := int64(binary.BigEndian.Uint64(hdr[24:32]))
	if lowest != HistLowestNS || highest != HistHighestNS || digits != HistDigits {
		return fmt.Errorf("histogram of %d..%d ns with %d digits, want %d..%d ns with %d",
			lowest, highest, digits, HistLowestNS, HistHighestNS, HistDigits)
	}
	return nil
}
