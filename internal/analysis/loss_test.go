package analysis_test

import (
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/results"
)

// The head-of-line clause: on a lossy link each protocol's p99 against the
// same link without loss, and the connections each used; none without
// loss, and none without the lossless cells to compare with.
func TestLossNote(t *testing.T) {
	at := func(p api.Protocol, l string, p99 float64, conns int) results.Cell {
		c := cell{p: p, s: api.Small, b: 100, c: results.Condition{Concurrency: 16, Link: l}, p50: 1000, p99: p99, callsPerS: 100}.build()
		c.Connections = conns
		return c
	}
	cells := []results.Cell{
		at(api.REST, "20mbit/40ms", 50000, 16), at(api.GRPC, "20mbit/40ms", 50000, 1),
		at(api.REST, "20mbit/40ms/1%loss", 70000, 16), at(api.GRPC, "20mbit/40ms/1%loss", 155000, 1),
	}
	vs := analysis.Verdicts(result(cells...))
	var found int
	for _, v := range vs {
		for _, n := range v.Notes {
			if strings.Contains(n, "loss") {
				found++
				if v.Condition.Link != "20mbit/40ms/1%loss" {
					t.Errorf("%s: loss note %q", v.Condition.Link, n)
				}
				for _, want := range []string{"at 1% loss", "REST's p99 rose 1.40x", "gRPC's p99 rose 3.1x", "REST on 16 connections, gRPC on one connection"} {
					if !strings.Contains(n, want) {
						t.Errorf("loss note %q: no %q", n, want)
					}
				}
			}
		}
	}
	if found != 1 {
		t.Errorf("%d loss notes, want 1: %+v", found, vs)
	}
	if vs := analysis.Verdicts(result(cells[2:]...)); strings.Contains(strings.Join(vs[0].Notes, " "), "loss,") {
		t.Errorf("a loss note without the lossless cells: %q", vs[0].Notes)
	}
}
