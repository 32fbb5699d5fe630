package fit

import (
	"errors"
	"fmt"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/cpuset"
	"github.com/meteorbench/meteorbench/internal/flagvalue"
	loadplan "github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Flags are fit's own flags as given; the messages of ParseOptions and of
// the Options methods below name them.
type Flags struct {
	Tier, Tiers, Traffic, Headroom string
	From                           string // a run document to take the costs from (FromDocument)
	SameHost, Verify               bool
}

// ParseOptions checks fit's own flags and builds the question.
func ParseOptions(f Flags) (Options, error) {
	var o Options
	if f.Tier == "" || f.Traffic == "" {
		return o, errors.New("give --tier and --traffic (e.g. --tier 1cpu/100mbit --traffic small=800,large=20)")
	}
	t, err := ParseTier(f.Tier)
	if err != nil {
		return o, fmt.Errorf("--tier: %w", err)
	}
	// From a document, the traffic may name a user's endpoints' pairs
	// (run --endpoints): FromCells finds them among its cells.
	known := api.Scenarios()
	if f.From != "" {
		known = nil
	}
	m, err := results.ParseMixOf(f.Traffic, known)
	if err != nil {
		return o, fmt.Errorf("--traffic: %w", err)
	}
	h, err := flagvalue.ParsePercent("--headroom", f.Headroom, 1, 100)
	if err != nil {
		return o, err
	}
	o.Plan = Plan{Tier: t, Traffic: m, Headroom: h, SameHost: f.SameHost}
	if f.Tiers != "" {
		if o.Plan.Tiers, err = ParseTiers(f.Tiers); err != nil {
			return o, fmt.Errorf("--tiers: %w", err)
		}
	}
	o.Verify = f.Verify
	return o, nil
}

// ServerCPUs is the own server's --server-cpus for measuring the tier:
// n as given (given), or with a target none to pin, else PinnedCPUs of
// what this machine may pin, with its note and the CPUs measured on o.
func (o *Options) ServerCPUs(n int, given, target bool) (int, error) {
	avail, err := cpuset.Available()
	if err != nil && !given {
		return n, fmt.Errorf("--tier: %w", err)
	}
	if given || target {
		return n, nil
	}
	n, note := PinnedCPUs(o.Plan.Tier, avail.Len())
	if note != "" {
		o.Notes = append(o.Notes, note)
	}
	o.MeasuredCPUs = float64(n)
	return n, nil
}

// OneCondition refuses a cfg of more than one condition: fit answers for
// one. --concurrency (workersGiven) is one worker count, o.Workers.
func (o *Options) OneCondition(cfg loadplan.Config, workersGiven bool) error {
	if len(cfg.Compress) > 1 || len(cfg.JSONCodecs) > 1 || len(cfg.TLS) > 1 || len(cfg.Records) > 1 {
		return errors.New("fit answers for one condition: give one value of --compress, --json-codec, --tls and --records")
	}
	if workersGiven {
		if len(cfg.Concurrency) != 1 {
			return errors.New("--concurrency: give one worker count (or none: it follows the traffic)")
		}
		o.Workers = cfg.Concurrency[0]
	}
	return nil
}
