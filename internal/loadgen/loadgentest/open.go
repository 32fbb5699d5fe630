package loadgentest

import (
	"context"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/results"
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

// Classify makes one call on a, bounded by 5 s, and gives its class (""
// for a success) and its error.
func Classify(a call.Caller) (results.ErrorClass, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := a.Call(ctx)
	return call.Classify(ctx, err), err
}
