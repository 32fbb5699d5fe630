package analysis

import (
	"slices"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
)

// A verdict's notes say which protocols of its scenario and HTTP version
// the target did not serve, and, apart, those a per-protocol --target gave
// no address, with the keys to add; another scenario's or HTTP version's
// are not its.
func TestNotServedNote(t *testing.T) {
	noAddress := "the per-protocol --target gives it no address (add ...)"
	r := &results.Result{Env: results.Env{Targets: map[string]string{"rest": "h:1", "rest-protobuf": "h:1", "grpc": "h:2"}}, NotServed: []results.NotServed{
		{Scenario: api.Small, Protocol: api.RESTProtobuf, Why: "http-404: status 404"},
		{Scenario: api.Small, Protocol: api.GRPCWeb, Why: noAddress},
		{Scenario: api.Small, Protocol: api.Connect, Why: noAddress},
		{Scenario: api.Small, Protocol: api.Connect, HTTPVersion: "2", Why: noAddress},
		{Scenario: api.Large, Protocol: api.GRPC, Why: "unimplemented"},
		{Scenario: api.Small, Protocol: api.REST, HTTPVersion: "2", Why: "http2: frame too large"},
	}}
	v := &results.Verdict{Scenario: api.Small}
	notServedNote(r, v)
	v3 := &results.Verdict{Scenario: api.Large}
	v3.Condition.HTTPVersion = "2"
	notServedNote(r, v3)
	if want := []string{"gRPC not served by the target: not measured"}; !slices.Equal(v3.Notes, want) {
		t.Errorf("large HTTP/2 verdict's notes %q, want %q (gRPC is asked once)", v3.Notes, want)
	}
	want := []string{
		"REST+protobuf not served by the target: not measured",
		"gRPC-Web, Connect not measured: --target gives no address (add grpc-web=HOST:PORT,connect=HOST:PORT)",
	}
	if !slices.Equal(v.Notes, want) {
		t.Errorf("notes %q, want %q", v.Notes, want)
	}
	v2 := &results.Verdict{Scenario: api.Small}
	v2.Condition.HTTPVersion = "2"
	notServedNote(r, v2)
	if want := []string{"REST not served by the target: not measured", "Connect not measured: --target gives no address (add connect=HOST:PORT)"}; !slices.Equal(v2.Notes, want) {
		t.Errorf("HTTP/2 verdict's notes %q, want %q", v2.Notes, want)
	}
}
