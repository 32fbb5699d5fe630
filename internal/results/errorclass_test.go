package results

import (
	"encoding/json"
	"testing"
)

func TestErrorClassPredicates(t *testing.T) {
	type preds struct{ unreachable, auth, invalid, timeout, cancelled, abandoned, protocol bool }
	for _, tc := range []struct {
		class ErrorClass
		want  preds
	}{
		{ClassTransport, preds{unreachable: true}},
		{GRPCClass("Unavailable"), preds{unreachable: true}},
		{HTTPClass(401), preds{auth: true}},
		{HTTPClass(403), preds{auth: true}},
		{GRPCClass("Unauthenticated"), preds{auth: true}},
		{GRPCClass("PermissionDenied"), preds{auth: true}},
		{ClassInvalid, preds{invalid: true}},
		{ClassTimeout, preds{timeout: true}},
		{ClassCancelled, preds{cancelled: true}},
		{ClassAbandoned, preds{abandoned: true}},
		{ClassProtocol, preds{protocol: true}},
		{HTTPClass(503), preds{}},
		{GRPCClass("Internal"), preds{}},
		{"http-40x", preds{}},
	} {
		c := tc.class
		got := preds{c.Unreachable(), c.Auth(), c.InvalidResponse(), c.Timeout(), c.Cancelled(), c.Abandoned(), c.Protocol()}
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", c, got, tc.want)
		}
	}
	if n, ok := HTTPClass(503).HTTPStatus(); string(HTTPClass(503)) != "http-503" || n != 503 || !ok {
		t.Errorf("HTTPClass(503) = %q, status %d %v", HTTPClass(503), n, ok)
	}
	if code, ok := GRPCClass("Unavailable").GRPCCode(); string(GRPCClass("Unavailable")) != "grpc-Unavailable" || code != "Unavailable" || !ok {
		t.Errorf("GRPCClass: %q %v", code, ok)
	}
	if _, ok := ClassTimeout.HTTPStatus(); ok {
		t.Error("timeout has an HTTP status")
	}
}

// The JSON keeps the classes' text: typed keys change nothing on the wire.
func TestErrorCountsJSON(t *testing.T) {
	m := ErrorCounts{HTTPClass(503): 1, ClassTimeout: 3, ClassAbandoned: 1}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"abandoned":1,"http-503":1,"timeout":3}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
	if got, want := m.String(), "timeout 3, abandoned 1, http-503 1"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
