package session

import (
	"context"
	"strconv"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/results"
)

// ContractRecords is the payload size `check` asks the list and stream
// calls for, to see that the target honours api.QueryRecords and
// api.MetadataRecords: small, and not the default answer.
const ContractRecords = 10

// CheckContract asks the target of cfg every call of the contract once, as
// run's probe does (every scenario over every protocol, the records asked
// for on the list and stream calls that answered), and for the optional
// parts: meteorbench's /metrics (server CPU per call) and /healthz. It
// measures nothing. An unreachable target fails; a target that serves
// nothing is a result (Contract.Serves).
func CheckContract(ctx context.Context, cfg plan.Config) (*results.Contract, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := newSession(cfg)
	// The default run's protocols: gRPC-Web and Connect are not asked
	// (they are served where REST is, by `meteorbench serve`).
	protocols := api.DefaultProtocols()
	if cfg.Target.Split() {
		protocols = cfg.Target.Protocols()
	}
	out := &results.Contract{Target: cfg.Target.String(), Targets: cfg.Target.ByProtocol()}
	var optional []results.ContractCall
	for _, a := range cfg.Addresses(protocols) {
		// Each address over its own protocol, as run asks it; one that
		// answers nothing, or the other HTTP version, fails the check.
		note, err := r.checkAddress(ctx, a) // targets.go
		if err != nil {
			if ctx.Err() != nil {
				return nil, ErrInterrupted
			}
			return nil, err
		}
		health := results.ContractCall{Part: "health", Request: "GET " + api.PathHealth, Served: note == "", Why: note}
		if !a.HTTP1 {
			health.Request = "grpc.health.v1.Health/Check"
		}
		metrics := results.ContractCall{Part: "metrics", Request: "GET " + api.PathMetrics + " (" + api.MetricCPU + ": server CPU per call)"}
		if a.HTTP1 {
			if sc, err := r.openScraper(ctx, a.Addr); err != nil { // scrape.go
				metrics.Why = oneLine(err) + ": server CPU per call not reported (--server-pid reads it for a server on this machine)"
			} else {
				metrics.Served = true
				sc.close()
			}
		} else {
			metrics.Why = "not asked: a gRPC-only address gets no HTTP/1.1 (--server-pid reads server CPU for a server on this machine)"
		}
		if cfg.Target.Split() {
			health.Target, metrics.Target = a.Addr, a.Addr
		}
		optional = append(optional, metrics, health)
	}
	ask := func(spec plan.Spec) (served bool) {
		k := results.ContractCall{Scenario: spec.Scenario, Protocol: spec.Protocol, Records: spec.Records, Request: contractRequest(spec)}
		if cfg.Target.Split() {
			k.Target = cfg.Target.For(spec.Protocol)
		}
		if err := r.probeOne(ctx, spec); err != nil {
			k.Why = oneLine(err)
		} else {
			k.Served = true
		}
		out.Calls = append(out.Calls, k)
		return k.Served
	}
	for _, sc := range api.Scenarios() {
		for _, p := range protocols {
			spec := plan.Spec{CellKey: results.CellKey{Scenario: sc, Protocol: p, Batch: 1, Condition: results.Condition{Concurrency: 1, TLS: cfg.TLSOnly()}}}
			if ask(spec) && (sc == api.Large || sc == api.Stream) {
				spec.Records = ContractRecords
				ask(spec)
			}
			if ctx.Err() != nil {
				return nil, ErrInterrupted
			}
		}
	}
	out.Optional = optional
	return out, nil
}

// contractRequest says what a probe of spec asks: the route, method and
// media type, or the RPC and its metadata.
func contractRequest(spec plan.Spec) string {
	records := func(before, after string) string {
		if spec.Records == 0 {
			return ""
		}
		return before + strconv.Itoa(spec.Records) + after
	}
	if spec.Protocol == api.GRPC {
		return "/" + pb.MeteoriteLandingsService_ServiceDesc.ServiceName + "/" + spec.Scenario.Method() + records(" (metadata "+api.MetadataRecords+": ", ")")
	}
	mt := api.TypeJSON
	if spec.Protocol == api.RESTProtobuf {
		mt = api.TypeProtobuf
	}
	switch spec.Scenario {
	case api.Small:
		return "GET " + api.PathVersion + " (Accept: " + mt + ")"
	case api.Large:
		return "GET " + api.PathList + records("?"+api.QueryRecords+"=", "") + " (Accept: " + mt + ")"
	case api.Stream:
		if mt == api.TypeJSON {
			mt = api.TypeNDJSON
		}
		return "GET " + api.PathStream + records("?"+api.QueryRecords+"=", "") + " (Accept: " + mt + ")"
	}
	return "POST " + api.PathList + " (Content-Type: " + mt + ")"
}
