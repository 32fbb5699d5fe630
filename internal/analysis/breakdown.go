package analysis

import (
	"math"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/cpubreakdown"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// breakdownClause says, for a verdict whose cells were profiled (run
// --profile), where the baseline's and the headline protocol's CPU differ
// most: the category whose CPU per call differs most, each side's share of
// it and its CPU per call ("REST's server CPU: 61% JSON encoding, 2.1
// ms/call; gRPC's: 24% protobuf encoding, 0.2 ms/call"). The server's
// side when both have it, else the client's; "" when neither.
func breakdownClause(base, head api.Protocol, byProto map[api.Protocol][]*results.Cell) string {
	for _, side := range []struct {
		name string
		get  func(c *results.Cell) *results.CPUBreakdown
	}{
		{"server", func(c *results.Cell) *results.CPUBreakdown { return c.ServerCPUBreakdown }},
		{"client", func(c *results.Cell) *results.CPUBreakdown { return c.ClientCPUBreakdown }},
	} {
		a, b := knownBreakdown(byProto[base], side.get), knownBreakdown(byProto[head], side.get)
		if a == nil || b == nil {
			continue
		}
		var best cpubreakdown.Category
		diff := -1.0
		for _, c := range cpubreakdown.Categories {
			if d := math.Abs(a.Categories[string(c)].USPerCall - b.Categories[string(c)].USPerCall); d > diff {
				best, diff = c, d
			}
		}
		part := func(p api.Protocol, bd *results.CPUBreakdown) string {
			s := bd.Categories[string(best)]
			return format.Percent(s.Share) + " " + categoryOf(p, best) + ", " + format.US(s.USPerCall) + "/call"
		}
		return base.Title() + "'s " + side.name + " CPU: " + part(base, a) + "; " + head.Title() + "'s: " + part(head, b)
	}
	return ""
}

// knownBreakdown is the first known breakdown of cs's side.
func knownBreakdown(cs []*results.Cell, get func(c *results.Cell) *results.CPUBreakdown) *results.CPUBreakdown {
	for _, c := range cs {
		if b := get(c); b.Known() {
			return b
		}
	}
	return nil
}

// categoryOf names a category as protocol p has it: its encoding is JSON's
// or protobuf's.
func categoryOf(p api.Protocol, c cpubreakdown.Category) string {
	enc := "protobuf "
	if p == api.REST {
		enc = "JSON "
	}
	switch c {
	case cpubreakdown.Encode, cpubreakdown.Decode:
		return enc + c.Label()
	}
	return c.Label()
}
