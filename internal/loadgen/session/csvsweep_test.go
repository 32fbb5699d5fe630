package session_test

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/target"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/results"
)

// A sweep over link, records, compression and TLS, read back from its CSV:
// every cell is one row, told apart by the condition's columns alone, and
// each row's columns give back its cell's condition.
func TestSweepCSVHasEveryCellOnce(t *testing.T) {
	addr, tc := tlsTarget(t, true)
	cfg := plan.Config{
		Target:     target.One(addr),
		Protocols:  []api.Protocol{api.REST, api.GRPC},
		Scenarios:  []api.Scenario{api.Large},
		Batches:    []int{1},
		Iterations: 1,
		Warmup:     -1,
		Links:      []link.Spec{{}, mustLink(t, "1gbit/1ms")},
		Records:    []int{1, 10},
		Compress:   []string{plan.CompressNone, plan.CompressGzip},
		TLS:        []bool{false, true},
		TLSConfig:  tc,
	}
	res := run(t, cfg)
	if want := 2 * 2 * 2 * 2 * 2; len(res.Cells) != want {
		t.Fatalf("%d cells, want %d", len(res.Cells), want)
	}
	var buf bytes.Buffer
	if err := report.Write(&buf, "csv", res); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	cells := map[string]int{}
	for i := range res.Cells {
		cells[res.Cells[i].Key()] = 0
	}
	for _, row := range rows[1:] {
		get := func(name string) string {
			i, ok := col[name]
			if !ok {
				t.Fatalf("no column %q in %v", name, rows[0])
			}
			return row[i]
		}
		atoi := func(name string) int {
			n, err := strconv.Atoi(get(name))
			if err != nil {
				t.Fatalf("column %s: %v", name, err)
			}
			return n
		}
		k := results.CellKey{
			Scenario: api.Scenario(get("scenario")), Protocol: api.Protocol(get("protocol")), Batch: atoi("batch"),
			Condition: results.Condition{
				Concurrency: atoi("concurrency"), ServerCPUs: atoi("server_cpus"), Link: get("link"),
				Records: atoi("records"), Compress: get("compress"), TLS: get("tls") == "true",
			},
		}
		n, ok := cells[k.Key()]
		if !ok {
			t.Errorf("row %s is no cell of the run", strings.Join(row, ","))
			continue
		}
		cells[k.Key()] = n + 1
	}
	for k, n := range cells {
		if n != 1 {
			t.Errorf("cell %s: %d rows, want 1", k, n)
		}
	}
}
