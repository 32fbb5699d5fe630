package results

import "github.com/meteorbench/meteorbench/api"

// A Crossover answers "from which payload size on does this protocol win?"
// for one scenario, one condition (all but the payload size) and one
// figure: over the verdicts that differ only by Condition.Records, sorted
// by size, the smallest measured size from which on the protocol is better
// than the baseline (Ratio.Better) at that size and every larger one.
// Package analysis computes crossovers; reporters only format them.
type Crossover struct {
	Scenario api.Scenario `json:"scenario"`
	// Condition is the verdicts' shared condition, with Records zeroed.
	Condition Condition    `json:"condition"`
	Protocol  api.Protocol `json:"protocol"`
	// Figure is FigLatencyP50 or FigCallsPerS.
	Figure Figure `json:"figure"`
	// Records is the crossover size: the protocol wins from it on. 0 when
	// it does not win at the largest size measured; Sizes[0] when it wins
	// at every size.
	Records int `json:"records"`
	// Sizes are the payload sizes with a ratio of this figure, ascending.
	Sizes []int `json:"sizes"`
	// Text says it in one line: "large: gRPC faster (p50) from 100 records
	// (measured 1, 10, 100, 1000, 10000)".
	Text string `json:"text"`
}
