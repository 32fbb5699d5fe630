package loadgen_test

import (
	"context"
	"github.com/meteorbench/meteorbench/internal/target"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen"
	"github.com/meteorbench/meteorbench/internal/results"
)

// serverCounts reads the server's meteorbench_requests_total, by
// "protocol/method".
func serverCounts(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	s, err := loadgen.Scrape(addr)
	if err != nil {
		t.Fatal(err)
	}
	return s.Requests
}

// quick is a small bounded run: no warm-up, a few batches per cell.
func quick(addr string) loadgen.Config {
	return loadgen.Config{
		Target:     target.One(addr),
		Protocols:  api.Protocols(),
		Scenarios:  api.Scenarios(),
		Batches:    []int{3},
		Iterations: 2,
		Warmup:     -1,
	}
}

func run(t *testing.T, cfg loadgen.Config) *results.Result {
	t.Helper()
	res, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func cellOf(t *testing.T, res *results.Result, scenario api.Scenario, protocol api.Protocol) *results.Cell {
	t.Helper()
	for i := range res.Cells {
		c := &res.Cells[i]
		if c.Scenario == scenario && c.Protocol == protocol {
			return c
		}
	}
	t.Fatalf("no cell %s/%s", scenario, protocol)
	return nil
}
