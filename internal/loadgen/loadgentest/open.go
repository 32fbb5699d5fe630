package loadgentest

import (
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// Open makes a client with open (an engine's constructor) and its caller
// of sc, failing the test on either error. Closing the client is the
// test's: some close it at the end, some within a loop.
func Open(t testing.TB, open func(api.Protocol, call.Options) (call.Client, error), p api.Protocol, o call.Options, sc api.Scenario) (call.Client, call.Caller) {
	t.Helper()
	c, err := open(p, o)
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.Caller(sc)
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	return c, a
}
