package results

import "github.com/meteorbench/meteorbench/api"

// Capacity is what `meteorbench capacity` found for one scenario, protocol
// and condition: the highest offered open-loop rate at which the objective
// held, bracketed, with every probe kept.
type Capacity struct {
	Scenario  api.Scenario `json:"scenario"`
	Protocol  api.Protocol `json:"protocol"`
	Condition Condition    `json:"condition"`
	// Objective is the latency percentile and bound, e.g. "p99<=50ms";
	// Percentile and BoundUS are the same as numbers.
	Objective  string  `json:"objective"`
	Percentile float64 `json:"percentile"`
	BoundUS    float64 `json:"bound_us"`
	// MaxErrors is the error budget, a fraction of attempts.
	MaxErrors float64 `json:"max_errors"`
	// Rate is the highest offered rate that passed (0: none); Lo and Hi
	// bracket the capacity (Hi 0: no rate failed).
	Rate float64 `json:"rate"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
	// Held of Boundary repeated probes at Rate passed.
	Held     int `json:"held"`
	Boundary int `json:"boundary"`
	// Workers is how many open-loop workers the probes at Rate had (0: no
	// rate passed): a check of the found rate repeats it with
	// `run --rate Rate --concurrency Workers` and the same condition.
	Workers int `json:"workers,omitempty"`
	// GeneratorBound is the rate the load generator could not deliver when
	// that ended the search: the capacity is at least Rate, unknown above.
	GeneratorBound float64 `json:"generator_bound,omitempty"`
	// Complete is false when the search was stopped (time bound,
	// generator-bound, interrupted) before confirming a rate.
	Complete bool `json:"complete"`
	// Failure says why the search failed, when it did: the target stalled
	// (calls abandoned or timed out, a suspect cell) in every retry of a
	// probe. No rate is claimed then (Rate 0), and the command exits
	// non-zero.
	Failure string          `json:"failure,omitempty"`
	Note    string          `json:"note,omitempty"`
	Probes  []CapacityProbe `json:"probes"`
}

// CapacityProbe is one fixed-length open-loop probe of a capacity search.
type CapacityProbe struct {
	Phase    string  `json:"phase"` // grow, bisect, confirm, boundary
	Offered  float64 `json:"offered"`
	Achieved float64 `json:"achieved"`
	// LatencyUS is from each call's intended start.
	LatencyUS Latency `json:"latency_us"`
	Calls     int64   `json:"calls"`
	Errors    int64   `json:"errors"`
	// Verdict is pass, fail or void (the load generator could not deliver
	// the rate, or the target stalled: Why then starts "the target
	// stalled: "); Why says what failed or voided it.
	Verdict   string  `json:"verdict"`
	Why       string  `json:"why,omitempty"`
	DurationS float64 `json:"duration_s"`
}
