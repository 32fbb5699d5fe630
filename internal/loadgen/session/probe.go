package session

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/summary"
	"github.com/meteorbench/meteorbench/internal/results"
)

// ErrNotContract is the error (wrapped) of a target that answered none of
// the plan's probe calls correctly.
var ErrNotContract = fmt.Errorf("does not serve the meteorbench contract")

// ErrEndpoints is the error (wrapped) of a user's endpoints that answered
// none of the probe calls correctly.
var ErrEndpoints = fmt.Errorf("answered no probe call correctly")

// probeContract makes one call of every scenario, protocol and HTTP
// version of the plan (its first condition of each) before the first cell, each over a client
// of its own with no link, within HealthTimeout. A target that answers
// none of them correctly is refused with what each got ("target X does not
// serve the meteorbench contract: small rest: http-404: ..."), instead of
// every cell running to its end on errors. It asks nothing of the target
// but the calls: no /healthz, no /metrics, which servers written from the
// contract elsewhere need not serve. The scenarios and protocols that
// failed among others that did are returned as not served: run measures
// what the target serves and records the rest (Result.NotServed).
func (r *Session) probeContract(ctx context.Context) (notServed []results.NotServed, err error) {
	if err := r.probePayload(ctx); err != nil { // payload.go
		return nil, err
	}
	seen := map[results.NotServed]bool{}
	speaks := map[string]int{} // each address's HTTP versions, asked when an HTTP/2 call failed
	var failed []string
	ok, refused := 0, 0
	for _, spec := range r.cfg.Specs() {
		k := results.NotServed{Scenario: spec.Scenario, Protocol: spec.Protocol, HTTPVersion: spec.HTTPVersion}
		if seen[k] || shareOf(r.cfg, spec, r.cfg.Bounds()).Empty {
			continue
		}
		seen[k] = true
		var perr error
		switch k.Why, perr = r.ask(ctx, spec, speaks); {
		case k.Why == "":
			ok++
		case perr == nil: // not asked
			notServed = append(notServed, k)
		case ctx.Err() != nil:
			return nil, ErrInterrupted
		case call.Classify(context.Background(), perr).Auth():
			// Refused credentials are the run's to fix, not a part the
			// target lacks: measured, the run stops on them (afterCell)
			// naming --token.
			failed = append(failed, k.Name()+": "+k.Why)
			refused++
		default:
			failed = append(failed, k.Name()+": "+k.Why)
			notServed = append(notServed, k)
		}
	}
	if ok == 0 && refused > 0 && refused == len(failed) {
		return nil, fmt.Errorf("target %s refused every probe call for its credentials (%s): check --token", r.cfg.Target, strings.Join(failed, "; "))
	}
	if ok == 0 && len(failed) > 0 && r.cfg.Endpoints != nil {
		return nil, fmt.Errorf("%s %w: %s", r.cfg.Endpoints.Name(results.MixScenario), ErrEndpoints, strings.Join(failed, "; "))
	}
	if ok == 0 && len(failed) > 0 {
		return nil, fmt.Errorf("target %s %w: %s", r.cfg.Target, ErrNotContract, strings.Join(failed, "; "))
	}
	return notServed, nil
}

// ask makes spec's probe call, as run's probe and check make it: why it
// was not served ("" when it was), and the call's error (nil when it was
// not asked: unaddressed). speaks holds each address's HTTP versions
// (onlyHTTP1, contract.go).
func (r *Session) ask(ctx context.Context, spec plan.Spec, speaks map[string]int) (why string, err error) {
	if why := r.unaddressed(spec); why != "" {
		return why, nil
	}
	if err := r.probeOne(ctx, spec); err != nil {
		return oneLine(err) + r.onlyHTTP1(ctx, spec, speaks), err
	}
	return "", nil
}

// unaddressed is why spec's protocol is not asked at all, "" when it is:
// gRPC-Web or Connect against a per-protocol --target that gives it no
// address (plan.BrowserProtocol).
func (r *Session) unaddressed(spec plan.Spec) string {
	if r.cfg.Endpoints == nil && r.cfg.Target.Split() && r.cfg.Target.For(spec.Protocol) == "" {
		return fmt.Sprintf("the per-protocol --target gives it no address (add %s=HOST:PORT, or give one port for every protocol: --target HOST:PORT)", spec.Protocol)
	}
	return ""
}

// NotServed are the scenarios and protocols of the session's plan that the
// target did not serve when probed: a capacity search leaves them out too.
func (s *Session) NotServed() []results.NotServed { return slices.Clone(s.notServed) }

// Serves reports whether the target served k's scenario and protocol when
// probed.
func (s *Session) Serves(k results.CellKey) bool {
	return len(served([]plan.Spec{{CellKey: k}}, s.notServed)) == 1
}

// served drops from specs the scenarios and protocols the target does not
// serve.
func served(specs []plan.Spec, not []results.NotServed) []plan.Spec {
	if len(not) == 0 {
		return specs
	}
	return slices.DeleteFunc(specs, func(s plan.Spec) bool {
		return slices.ContainsFunc(not, func(n results.NotServed) bool {
			return n.Scenario == s.Scenario && n.Protocol == s.Protocol && n.HTTPVersion == s.HTTPVersion
		})
	})
}

// probeOne makes one call of spec's scenario and protocol.
func (r *Session) probeOne(ctx context.Context, spec plan.Spec) error {
	mix, err := mixOf(spec)
	if err != nil {
		return err
	}
	o := r.options(spec, r.dialer(spec), 1)
	o.Connections = 0 // the protocol's default for one worker
	if spec.Scenario.IsStream() {
		// A stream of one message: its one call also ends the stream
		// and checks the answer (an upload's status), so a server
		// without the method cannot pass for one.
		o.Messages = 1
	}
	client, err := r.newClient(spec, o)
	if err != nil {
		return err
	}
	defer client.Close()
	callers, err := partCallers(client, spec, mix, 1, 0)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, HealthTimeout)
	defer cancel()
	scenarios := summary.Scenarios(spec, mix)
	for i, caller := range callers.List[0] { // a mix: one call of each of its scenarios
		_, err = caller.Call(ctx)
		if err != nil && spec.Protocol == api.GRPC && scenarios[i].Method() != "" {
			return fmt.Errorf("gRPC %s: %w", scenarios[i].Method(), err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// oneLine is an error's text on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
