package session

import (
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
)

// newClient opens the client of spec's cell: its protocol's, over its
// engine (plan.EngineOf), with the options of its cell (r.options).
func (r *Session) newClient(spec plan.Spec, o call.Options) (call.Client, error) {
	e, err := plan.EngineOf(r.cfg, spec.CellKey)
	if err != nil {
		return nil, err
	}
	return e.Client(r.cfg, spec.Protocol, o)
}
