package results

import "github.com/meteorbench/meteorbench/api"

// NotServed is a scenario and protocol of the plan that the target did not
// answer correctly when probed before the first cell (a server written
// elsewhere from the contract may serve only part of it), so run did not
// measure it: Result.NotServed lists them instead of cells full of errors.
type NotServed struct {
	Scenario api.Scenario `json:"scenario"`
	Protocol api.Protocol `json:"protocol"`
	// HTTPVersion is the HTTP version it was asked over, as a cell's
	// (Condition.HTTPVersion): "2", or "" for HTTP/1.1 and gRPC.
	HTTPVersion string `json:"http_version,omitempty"`
	// Why is what the probe call got: "http-404: status 404"; or, for a
	// protocol never asked, why not.
	Why string `json:"why"`
}

// Contract is what `meteorbench check` found a target serves of the
// contract (docs/contract.md): one probe call per scenario, protocol and
// HTTP version asked, the records asked for, and the optional parts.
type Contract struct {
	Target string `json:"target"`
	// Targets is each protocol's address when they were given apart
	// (--target rest=...,grpc=...).
	Targets map[string]string `json:"targets,omitempty"`
	// Calls are the contract's calls, in the order run's plan measures
	// them (scenario, then HTTP version, then protocol); a call with
	// Records set asked for that many records instead of the default
	// answer.
	Calls []ContractCall `json:"calls"`
	// Optional are the parts a server may lack and still be measured
	// (meteorbench's metrics: without them, no server CPU per call).
	Optional []ContractCall `json:"optional"`
}

// ContractCall is one request made to the target and how it went.
type ContractCall struct {
	Scenario api.Scenario `json:"scenario,omitempty"`
	Protocol api.Protocol `json:"protocol,omitempty"`
	// Part names an optional part ("metrics"); empty for a call.
	Part string `json:"part,omitempty"`
	// HTTPVersion is the HTTP version the call was made over, as a cell's
	// (Condition.HTTPVersion): "2", or "" for HTTP/1.1 (and for gRPC,
	// always HTTP/2).
	HTTPVersion string `json:"http_version,omitempty"`
	// Records is the payload size asked for (api.QueryRecords); 0: none.
	Records int `json:"records,omitempty"`
	// Request says what was asked: "GET /api/MeteoriteLandings
	// (Accept: application/json)".
	Request string `json:"request"`
	// Target is the address asked, when the protocols have their own.
	Target string `json:"target,omitempty"`
	Served bool   `json:"served"`
	// Why is what went wrong, when not served.
	Why string `json:"why,omitempty"`
}

// Name is what was not served, as run's and check's lines say it: "small
// rest", "small rest over HTTP/2".
func (n NotServed) Name() string { return callName(n.Scenario, n.Protocol, n.HTTPVersion) }

// Name is what the call asked for, as NotServed.Name says it.
func (k ContractCall) Name() string { return callName(k.Scenario, k.Protocol, k.HTTPVersion) }

func callName(sc api.Scenario, p api.Protocol, httpVersion string) string {
	name := string(sc) + " " + string(p)
	if httpVersion != "" { // HTTP/1.1 unnamed, as in run's cells
		name += " over HTTP/" + httpVersion
	}
	return name
}

// Serves reports whether the target answered at least one of the
// contract's calls correctly.
func (c *Contract) Serves() bool {
	for _, k := range c.Calls {
		if k.Served {
			return true
		}
	}
	return false
}
