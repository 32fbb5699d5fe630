package loadgen

import (
	"fmt"

	"github.com/meteorbench/meteorbench/api"

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
// scenario, batch, concurrency and compression, every repeat of every protocol, with
// protocols innermost (rest, grpc, rest, grpc, ...). Slow drift of the
// machine then hits all protocols of a cell alike.
func plan(c Config) []cellSpec {
	var out []cellSpec
	for _, sc := range c.Scenarios {
		for _, b := range c.Batches {
			for _, n := range c.Concurrency {
				for _, z := range c.Compress {
					for r := range c.Repeat {
						for _, p := range c.Protocols {
							out = append(out, cellSpec{CellKey: results.CellKey{
								Scenario: sc, Protocol: p, Batch: b,
								Condition: results.Condition{Concurrency: n, RateRequested: c.Rate, ServerCPUs: c.ServerCPUs, Compress: conditionCompress(z)},
							}, Repeat: r})
						}
					}
				}
			}
		}
	}
	return out
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
