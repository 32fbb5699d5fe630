package results

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/api"
)

// MixScenario is the scenario of a mixed-traffic cell (run --mix): several
// scenarios at once, each at its own rate, over one protocol's shared
// connections. Its Condition.Mix names the scenarios and their rates, its
// RateRequested is their sum and its Mix figures give each scenario's.
const MixScenario api.Scenario = "mix"

// MixPart is one scenario of a traffic mix and its offered rate, calls/s.
type MixPart struct {
	Scenario api.Scenario
	Rate     float64
}

// Mix is a traffic mix: scenarios at their rates, each named once.
type Mix []MixPart

// ParseMix reads "small=800,large=20,post=5": every part a known scenario
// and a positive rate in calls/s, each scenario once. Errors are one line.
func ParseMix(s string) (Mix, error) { return ParseMixOf(s, api.Scenarios()) }

// ParseMixOf is ParseMix over the scenarios known; nil knows any name (a
// user's endpoints' pairs: the run, or the document, checks them).
func ParseMixOf(s string, known []api.Scenario) (Mix, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no scenario=rate given (e.g. small=800,large=20,post=5)")
	}
	var m Mix
	for _, part := range strings.Split(s, ",") {
		name, rate, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("%q: want scenario=calls/s (e.g. small=800)", part)
		}
		sc := api.Scenario(strings.TrimSpace(name))
		switch {
		case known != nil && !slices.Contains(known, sc):
			return nil, fmt.Errorf("%q: unknown scenario %q (want %s)", part, sc, scenarioNames(known))
		case sc == "" || sc == MixScenario:
			return nil, fmt.Errorf("%q: want scenario=calls/s (e.g. small=800)", part)
		}
		r, err := strconv.ParseFloat(strings.TrimSpace(rate), 64)
		if err != nil || math.IsNaN(r) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("%q: rate %q is not a number of calls/s", part, rate)
		}
		if r <= 0 {
			return nil, fmt.Errorf("%q: rate must be above 0 calls/s", part)
		}
		if slices.ContainsFunc(m, func(p MixPart) bool { return p.Scenario == sc }) {
			return nil, fmt.Errorf("scenario %q given twice", sc)
		}
		m = append(m, MixPart{Scenario: sc, Rate: r})
	}
	return m, nil
}

func scenarioNames(known []api.Scenario) string {
	var parts []string
	for _, s := range known {
		parts = append(parts, string(s))
	}
	return strings.Join(parts, ", ")
}

// String is the canonical text ParseMix reads: "small=800,large=20".
func (m Mix) String() string {
	parts := make([]string, len(m))
	for i, p := range m {
		parts[i] = string(p.Scenario) + "=" + strconv.FormatFloat(p.Rate, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// Total is the sum of the parts' rates.
func (m Mix) Total() float64 {
	t := 0.0
	for _, p := range m {
		t += p.Rate
	}
	return t
}

// Scale is the mix with every rate times f.
func (m Mix) Scale(f float64) Mix {
	out := slices.Clone(m)
	for i := range out {
		out[i].Rate *= f
	}
	return out
}

// Rate is the mix's rate of scenario s; 0 when it has none.
func (m Mix) Rate(s api.Scenario) float64 {
	for _, p := range m {
		if p.Scenario == s {
			return p.Rate
		}
	}
	return 0
}

// MixStat is one scenario's share of a mixed-traffic cell (Cell.Mix): its
// offered and achieved rates (attempts per second) and its latency from
// each call's intended start. With repeats, medians over them.
type MixStat struct {
	Scenario     api.Scenario `json:"scenario"`
	OfferedRate  float64      `json:"offered_rate"`
	AchievedRate float64      `json:"achieved_rate"`
	Calls        int64        `json:"calls"`
	Errors       int64        `json:"errors"`
	LatencyUS    Latency      `json:"latency_us"`
}
