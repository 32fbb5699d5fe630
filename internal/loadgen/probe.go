package loadgen

import (
	"context"
	"fmt"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// ErrNotContract is the error (wrapped) of a target that answered none of
// the plan's probe calls correctly.
var ErrNotContract = fmt.Errorf("does not serve the meteorbench contract")

// probeContract makes one call of every scenario and protocol of the plan
// (its first condition of each) before the first cell, each over a client
// of its own with no link, within HealthTimeout. A target that answers
// none of them correctly is refused with what each got ("target X does not
// serve the meteorbench contract: small rest: http-404: ..."), instead of
// every cell running to its end on errors. It asks nothing of the target
// but the calls: no /healthz, no /metrics, which servers written from the
// contract elsewhere need not serve. The answers that failed among others
// that did are returned as notes.
func (r *runner) probeContract(ctx context.Context) (notes []string, err error) {
	seen := map[[2]string]bool{}
	var failed []string
	ok := 0
	for _, spec := range plan(r.cfg) {
		k := [2]string{string(spec.Scenario), string(spec.Protocol)}
		if seen[k] || r.cfg.shareOf(spec).empty {
			continue
		}
		seen[k] = true
		if perr := r.probeOne(ctx, spec); perr != nil {
			if ctx.Err() != nil {
				return nil, ErrInterrupted
			}
			failed = append(failed, fmt.Sprintf("%s %s: %v", spec.Scenario, spec.Protocol, perr))
			continue
		}
		ok++
	}
	if ok == 0 && len(failed) > 0 {
		return nil, fmt.Errorf("target %s %w: %s", r.cfg.Target, ErrNotContract, strings.Join(failed, "; "))
	}
	for _, f := range failed {
		notes = append(notes, "probe call failed before measuring: "+f)
	}
	return notes, nil
}

// probeOne makes one call of spec's scenario and protocol.
func (r *runner) probeOne(ctx context.Context, spec cellSpec) error {
	client, err := protocols[spec.Protocol](call.Options{
		Target:    r.cfg.Target,
		Token:     r.cfg.Token,
		Workers:   1,
		Records:   spec.Records,
		Dialer:    r.dialer(spec),
		Compress:  spec.Compress,
		JSONCodec: spec.JSONCodec,
	})
	if err != nil {
		return err
	}
	defer client.Close()
	callers, err := partCallers(client, spec, r.cfg.Mix, 1) // a mix: one call of each scenario
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, HealthTimeout)
	defer cancel()
	for i, caller := range callers[0] {
		_, err = caller.Call(ctx)
		if err != nil && spec.Protocol == api.GRPC {
			return fmt.Errorf("gRPC %s: %w", r.cfg.servedScenarios(spec)[i].Method(), err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
