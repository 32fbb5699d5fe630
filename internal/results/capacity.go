package results

import "github.com/meteorbench/meteorbench/api"

// Capacity is what `meteorbench capacity` found for one scenario, protocol
// and condition: the highest offered open-loop rate at which the objective
// held, bracketed, with every probe kept. With one search (the default) the
// search's fields are the series'; with several (--repeat K), Searches
// holds each search and the fields are over them (see CapacitySearch).
type Capacity struct {
	Scenario  api.Scenario `json:"scenario"`
	Protocol  api.Protocol `json:"protocol"`
	Condition Condition    `json:"condition"`
	CapacityObjective

	// The series' result. With several searches: Rate is the median of
	// their found rates; Lo and Hi span their brackets (the lowest lo, the
	// highest hi, 0 when one had no failure); Held and Boundary are summed;
	// Workers are those of a probe at the median; GeneratorBound is the
	// highest of theirs (Rate is then a lower bound); Complete when every
	// search was; Failure and Note name the search ("search 2 of 3: ...");
	// Probes is empty (each search has its own).
	CapacitySearch

	// RateMin and RateMax are the lowest and highest found rate of the
	// searches (0 with one search).
	RateMin float64 `json:"rate_min,omitempty"`
	RateMax float64 `json:"rate_max,omitempty"`
	// Searches are the repeated searches, in the order they ran (none with
	// one search).
	Searches []CapacitySearch `json:"searches,omitempty"`
}

// CapacityObjective is what the searches held a rate to, the same for
// every series of a run (capacity --objective, --max-errors).
type CapacityObjective struct {
	// Objective is the latency percentile and bound, e.g. "p99<=50ms";
	// Percentile and BoundUS are the same as numbers.
	Objective  string  `json:"objective"`
	Percentile float64 `json:"percentile"`
	BoundUS    float64 `json:"bound_us"`
	// MaxErrors is the error budget, a fraction of attempts.
	MaxErrors float64 `json:"max_errors"`
}

// CapacitySearch is one search's result.
type CapacitySearch struct {
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
	// generator-bound, interrupted, failed) before confirming a rate.
	Complete bool `json:"complete"`
	// Failure says why the search failed, when it did: the target stalled
	// (calls abandoned or timed out, a suspect cell) in every retry of a
	// probe. No rate is claimed then (Rate 0), and the command exits
	// non-zero.
	Failure string `json:"failure,omitempty"`
	// Unstable says how the search's probes contradict each other: a
	// rate failed well below one that passed (the target or the machine
	// slowed or sped up during the search). Its rate is then no capacity,
	// and no ratio is drawn from it.
	Unstable string          `json:"unstable,omitempty"`
	Note     string          `json:"note,omitempty"`
	Probes   []CapacityProbe `json:"probes"`
}

// Repeated is the number of searches behind the series' result (1: one).
func (c *Capacity) Repeated() int { return max(1, len(c.Searches)) }

// LowerBound says whether a found rate is only a lower bound of the
// capacity: the load generator could not offer more, or no rate failed
// (a search stopped while it was still growing, or one that reached its
// maximum rate). No ratio is drawn from it.
func (c *CapacitySearch) LowerBound() bool { return c.Rate > 0 && (c.GeneratorBound > 0 || c.Hi == 0) }

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
