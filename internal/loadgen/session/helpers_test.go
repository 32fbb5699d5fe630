package session_test

import (
	"context"
	"testing"

	"github.com/meteorbench/meteorbench/internal/target"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/testmode"
)

// serverCounts reads the server's meteorbench_requests_total, by
// "protocol/method".
func serverCounts(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	s, err := session.Scrape(addr)
	if err != nil {
		t.Fatal(err)
	}
	return s.Requests
}

// shortScenarios is every scenario, or under -short (the race step) all
// but large: a large call takes the small call's path with 1000 records,
// the costliest cells under the race detector. The normal step runs all.
func shortScenarios(t *testing.T) []api.Scenario {
	if testmode.Short(t, "no large cells (a large call takes the small call's path, with 1000 records)") {
		return []api.Scenario{api.Small, api.Stream, api.Post}
	}
	return api.Scenarios()
}

// quick is a small bounded run: no warm-up, a few batches per cell.
func quick(addr string) plan.Config {
	return plan.Config{
		Target:     target.One(addr),
		Protocols:  api.DefaultProtocols(),
		Scenarios:  api.Scenarios(),
		Batches:    []int{3},
		Iterations: 2,
		Warmup:     -1,
	}
}

func run(t *testing.T, cfg plan.Config) *results.Result {
	t.Helper()
	res, err := session.Run(context.Background(), cfg)
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
