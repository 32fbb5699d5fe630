package session

import (
	"context"
	"strconv"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/results"
)

// ContractRecords is the payload size `check` asks the list and stream
// calls for, to see that the target honours api.QueryRecords and
// api.MetadataRecords: small, and not the default answer.
const ContractRecords = 10

// CheckContract asks the target of cfg every call of the contract once, as
// run's probe does (every scenario over every protocol of cfg, each REST
// and web protocol at every HTTP version of cfg, the records asked for on
// the list and stream calls that answered), and for the optional parts:
// meteorbench's /metrics (server CPU per call) and /healthz. Without
// protocols, cfg asks run's defaults (those --target gives an address).
// It measures nothing. An unreachable target fails; a target that serves
// nothing is a result (Contract.Serves).
func CheckContract(ctx context.Context, cfg plan.Config) (*results.Contract, error) {
	cfg = cfg.WithDefaults()
	// One call of each: the plan's cells at batch 1, one worker, once.
	cfg.Batches, cfg.Concurrency, cfg.Repeat = []int{1}, []int{1}, 1
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := newSession(cfg)
	out := &results.Contract{Target: cfg.Target.String(), Targets: cfg.Target.ByProtocol()}
	var optional []results.ContractCall
	for _, a := range cfg.Addresses(cfg.Protocols) {
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
	speaks := map[string]int{} // onlyHTTP1's answers, by address
	ask := func(spec plan.Spec) (served bool) {
		k := results.ContractCall{Scenario: spec.Scenario, Protocol: spec.Protocol, HTTPVersion: spec.HTTPVersion, Records: spec.Records, Request: contractRequest(spec)}
		if cfg.Target.Split() {
			k.Target = cfg.Target.For(spec.Protocol)
		}
		k.Why, _ = r.ask(ctx, spec, speaks) // probe.go
		k.Served = k.Why == ""
		out.Calls = append(out.Calls, k)
		return k.Served
	}
	for _, spec := range cfg.Specs() {
		if ask(spec) && (spec.Scenario == api.Large || spec.Scenario == api.Stream) {
			spec.Records = ContractRecords
			ask(spec)
		}
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
	}
	out.Optional = optional
	return out, nil
}

// onlyHTTP1 is what a failed HTTP/2 call of spec adds to its error when
// its address speaks HTTP/1.1 only (the HTTP/2 client's own words, "http2:
// frame too large", name no cause): " (ADDR speaks HTTP/1.1 only)".
// speaks holds each address's answer, asked once.
func (r *Session) onlyHTTP1(ctx context.Context, spec plan.Spec, speaks map[string]int) string {
	addr := r.cfg.Target.For(spec.Protocol)
	if spec.HTTPVersion != "2" || spec.Protocol == api.GRPC || ctx.Err() != nil {
		return ""
	}
	v, ok := speaks[addr]
	if !ok {
		v = r.speaks(ctx, addr) // targets.go
		speaks[addr] = v
	}
	if v != speaksHTTP1 {
		return ""
	}
	return " (" + addr + " speaks HTTP/1.1 only)"
}

// contractRequest says what a probe of spec asks: the route, method,
// HTTP version (when 2; gRPC's is always) and media type, or the RPC and
// its metadata.
func contractRequest(spec plan.Spec) string {
	records := func(before, after string) string {
		if spec.Records == 0 {
			return ""
		}
		return before + strconv.Itoa(spec.Records) + after
	}
	version := ""
	if spec.HTTPVersion != "" {
		version = " HTTP/" + spec.HTTPVersion
	}
	rpc := api.PathRPCPrefix + spec.Scenario.Method()
	switch spec.Protocol {
	case api.GRPC:
		return rpc + records(" (metadata "+api.MetadataRecords+": ", ")")
	case api.GRPCWeb, api.Connect:
		mt := api.TypeConnectProto
		switch {
		case spec.Protocol == api.GRPCWeb:
			mt = api.TypeGRPCWebProto
		case spec.Scenario == api.Stream:
			mt = api.TypeConnectStreamProto
		}
		return "POST " + rpc + version + " (Content-Type: " + mt + records(", "+api.MetadataRecords+": ", "") + ")"
	}
	mt := api.TypeJSON
	if spec.Protocol == api.RESTProtobuf {
		mt = api.TypeProtobuf
	}
	switch spec.Scenario {
	case api.Small:
		return "GET " + api.PathVersion + version + " (Accept: " + mt + ")"
	case api.Upload:
		if mt == api.TypeJSON {
			mt = api.TypeNDJSON
		}
		return "POST " + api.PathUpload + version + " chunked (Content-Type: " + mt + ")"
	case api.Chat, api.Feed:
		frames := "text frames, JSON"
		if mt == api.TypeProtobuf {
			frames = "binary frames, protobuf"
		}
		path := api.PathChat
		if spec.Scenario == api.Feed {
			path = api.PathFeed
		}
		return "GET " + path + " WebSocket (" + frames + ")"
	case api.Large:
		return "GET " + api.PathList + records("?"+api.QueryRecords+"=", "") + version + " (Accept: " + mt + ")"
	case api.Stream:
		if mt == api.TypeJSON {
			mt = api.TypeNDJSON
		}
		return "GET " + api.PathStream + records("?"+api.QueryRecords+"=", "") + version + " (Accept: " + mt + ")"
	}
	return "POST " + api.PathList + version + " (Content-Type: " + mt + ")"
}
