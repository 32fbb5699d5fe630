package loadgen

import (
	"fmt"

	"github.com/meteorbench/meteorbench/api"

	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/grpccall"
	"github.com/meteorbench/meteorbench/internal/loadgen/restcall"
	"github.com/meteorbench/meteorbench/internal/results"
)

// cellSpec is one measurement: a cell of the plan and which repeat it is.
type cellSpec struct {
	results.CellKey
	Repeat int // 0-based
}

func (s cellSpec) String() string {
	s2 := fmt.Sprintf("%s %s · batch %d · %s", s.Scenario, s.Protocol, s.Batch, s.Condition.Label())
	if s.Repeat > 0 {
		s2 += fmt.Sprintf(" · repeat %d", s.Repeat+1)
	}
	return s2
}

// plan expands a config into the order cells are measured in: for each
// scenario, batch, link, concurrency, payload size and compression, every repeat of every protocol, with
// protocols innermost (rest, grpc, rest, grpc, ...). Slow drift of the
// machine then hits all protocols of a cell alike.
func plan(c Config) []cellSpec {
	var out []cellSpec
	for _, sc := range c.Scenarios {
		for _, b := range c.Batches {
			for _, l := range c.Links {
				for _, n := range c.Concurrency {
					for _, rec := range recordsOf(c, sc) {
						for _, z := range c.Compress {
							for r := range c.Repeat {
								for _, p := range c.Protocols {
									out = append(out, cellSpec{CellKey: results.CellKey{
										Scenario: sc, Protocol: p, Batch: b,
										Condition: results.Condition{Concurrency: n, RateRequested: c.Rate, ServerCPUs: c.ServerCPUs,
											Link: conditionLink(l), Records: rec, Compress: conditionCompress(z)},
									}, Repeat: r})
								}
							}
						}
					}
				}
			}
		}
	}
	return withTLS(out, c.TLS) // tls.go
}

// recordsOf is the payload sizes a scenario is measured at: every one of
// c.Records, or just the unnamed default (0); small has no payload.
func recordsOf(c Config, sc api.Scenario) []int {
	if len(c.Records) == 0 || sc == api.Small {
		return []int{0}
	}
	return c.Records
}

// protocols maps a protocol name to its client constructor: the only place
// the engine knows which adapters exist.
var protocols = map[api.Protocol]func(call.Options) (call.Client, error){
	api.REST: func(o call.Options) (call.Client, error) {
		return restcall.NewJSON(o)
	},
	api.RESTProtobuf: func(o call.Options) (call.Client, error) {
		return restcall.NewProtobuf(o)
	},
	api.GRPC: func(o call.Options) (call.Client, error) {
		return grpccall.New(o)
	},
}

// Cells lists the cells of c's plan once each (repeats not repeated), in
// the order they are measured.
func (c Config) Cells() []results.CellKey {
	var out []results.CellKey
	for _, s := range plan(c.withDefaults()) {
		if s.Repeat == 0 {
			out = append(out, s.CellKey)
		}
	}
	return out
}

// Only narrows c to one cell of its plan: k's scenario, protocol, batch and
// condition, so that Run measures that cell alone (the capacity search
// probes one cell at many rates this way). A dimension added to the plan
// is narrowed here too.
func (c Config) Only(k results.CellKey) Config {
	c.Scenarios = []api.Scenario{k.Scenario}
	c.Protocols = []api.Protocol{k.Protocol}
	c.Batches = []int{k.Batch}
	c.Concurrency = []int{k.Concurrency}
	c.Rate = k.RateRequested
	c.Links = []link.Spec{{}} // the zero Spec is no emulation
	if k.Link != "" {
		if l, err := link.Parse(k.Link); err == nil {
			c.Links = []link.Spec{l}
		}
	}
	c.Records = nil
	if k.Records > 0 {
		c.Records = []int{k.Records}
	}
	c.Compress = []string{CompressNone}
	if k.Compress != "" {
		c.Compress = []string{k.Compress}
	}
	if len(c.TLS) > 0 || k.TLS {
		c.TLS = []bool{k.TLS}
	}
	return c
}
