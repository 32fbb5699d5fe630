package results

import "github.com/meteorbench/meteorbench/api"

// A Verdict answers the run's question for one scenario under one
// condition: how each protocol compares with the baseline (REST). Batch
// sizes are pooled: per-call figures do not depend on them, so one run
// gives one verdict per question. Package analysis computes verdicts from
// the cells; reporters only format them.
type Verdict struct {
	Scenario  api.Scenario `json:"scenario"`
	Condition Condition    `json:"condition"`
	// Batches are the batch sizes pooled into this verdict.
	Batches  []int        `json:"batches"`
	Baseline api.Protocol `json:"baseline"`
	// Summary is the one line people read first, e.g. "large: gRPC 3.9x
	// [3.6, 4.4] more calls/s, 2.2x fewer bytes, 2.9x less server CPU; 85%
	// of the gain from the encoding (rest-protobuf)".
	Summary string   `json:"summary"`
	Versus  []Versus `json:"versus"`
	// Notes qualify the verdict: too few repeats to test, a saturated
	// open-loop cell, client decoding dominating a latency, a protocol
	// without successful calls.
	Notes []string `json:"notes,omitempty"`
	// Decomposition splits REST→gRPC into its steps (encoding,
	// transport, framing) and sets what a browser reaches against gRPC,
	// on the verdict at HTTP/1.1 of a scenario whose run measured the
	// cells (run --proto all --http-version 1.1,2); nil otherwise. Its
	// Line is also the verdict's first note.
	Decomposition *Decomposition `json:"decomposition,omitempty"`
}

// Decomposition is REST→gRPC as the product of three steps, each changing
// one thing: the encoding (rest → rest-protobuf, both over HTTP/1.1), the
// transport (rest-protobuf over HTTP/1.1 → over HTTP/2) and the framing
// (rest-protobuf over HTTP/2 → gRPC). Each figure of a step is the ratio
// of the two sides' medians, so the steps' ratios multiply to Whole's
// exactly; the interval of each is the paired ratios' (as a Versus's).
// Browser is gRPC-Web and Connect, over HTTP/2 and HTTP/1.1, against
// native gRPC.
type Decomposition struct {
	Steps   []Step `json:"steps"`
	Whole   Step   `json:"whole"`
	Browser []Step `json:"browser,omitempty"`
	// Line says it in one line, as the verdict's first note.
	Line string `json:"line"`
}

// Step is one comparison of a Decomposition: To against From, at their
// HTTP versions; Ratios are the p50 latency and the server CPU per call
// (To / From; below 1 is better for both).
type Step struct {
	Name   string  `json:"step"`
	From   string  `json:"from"`
	To     string  `json:"to"`
	Ratios []Ratio `json:"ratios"`
}

// Versus is one protocol against the verdict's baseline.
type Versus struct {
	Protocol api.Protocol `json:"protocol"`
	Ratios   []Ratio      `json:"ratios"`
	// Saturated is set when an open-loop cell of either side achieved under
	// 90% of the requested rate: its latency is queueing, so the verdict
	// has no latency ratios, and this says the rates each side reached.
	Saturated string `json:"saturated,omitempty"`
	// EncodingShare is, for gRPC against REST when rest-protobuf was
	// measured too, the fraction of gRPC's p50 latency gain that
	// rest-protobuf (the same HTTP/1.1 transport with protobuf) already
	// has: the encoding's part; the rest is the transport's. May exceed 1
	// (HTTP/2 then costs time) or be negative.
	EncodingShare *float64 `json:"encoding_share,omitempty"`
}

// Significance says what a ratio's samples can show.
type Significance string

const (
	// Significant: the Mann-Whitney U test over the samples rejects "no
	// difference" at α = 0.05.
	Significant Significance = "significant"
	// NotSignificant: enough samples to test, and the test does not show a
	// difference.
	NotSignificant Significance = "not significant"
	// TooFew: repeated, but too few samples for the test to ever reject at
	// α = 0.05 (fewer than 4 a side).
	TooFew Significance = "too few to test"
	// Untested: one measurement a side; nothing to test.
	Untested Significance = "untested"
)

// Ratio is one figure of a protocol divided by the baseline's.
type Ratio struct {
	Figure Figure `json:"figure"`
	// Ratio is protocol / baseline, pooled over batches (the median of the
	// paired per-measurement ratios).
	Ratio float64 `json:"ratio"`
	// Better says whether the protocol is better than the baseline on this
	// figure (Ratio > 1 for calls/s, < 1 for latency and costs).
	Better bool `json:"better"`
	// Lo and Hi bound Ratio when there are at least two paired samples.
	Lo *float64 `json:"lo,omitempty"`
	Hi *float64 `json:"hi,omitempty"`
	// N is the number of paired samples (batches x repeats).
	N            int          `json:"n"`
	Significance Significance `json:"significance"`
	P            *float64     `json:"p,omitempty"`
}
