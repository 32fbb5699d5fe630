package server_test

import (
	"net/http"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/server"
)

// forcedGCs counts the collections forced in this process (runtime.GC,
// debug.FreeOSMemory): how the server's relief (membudget.go) shows.
func forcedGCs() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestReliefWaitsForEveryCall: after a burst of large answers the server
// returns its memory (a forced collection) only once no call of any kind
// has come for a while: not while small calls go on, which a benchmark's
// `small` cell right after a `large` one is (a collection there lands in
// its latencies). Once the calls stop, the relief comes.
func TestReliefWaitsForEveryCall(t *testing.T) {
	c := startClient(t, server.Config{MemoryLimit: 64 << 20}) // a 16 MiB budget
	// Well over a 32nd of the budget admitted.
	for range 8 {
		if resp, _ := c.do(t, http.MethodGet, api.PathList, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("large call: %s", resp.Status)
		}
	}
	before := forcedGCs()
	// Small calls only, REST and gRPC, for longer than the relief's quiet
	// time and tick together.
	end := time.Now().Add(4500 * time.Millisecond)
	calls := 0
	for time.Now().Before(end) {
		if resp, _ := c.do(t, http.MethodGet, api.PathVersion, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("small REST call: %s", resp.Status)
		}
		if _, err := c.grpc.GetVersion(c.ctx(t), &pb.EmptyRequest{}); err != nil {
			t.Fatal(err)
		}
		calls += 2
		time.Sleep(20 * time.Millisecond)
	}
	if n := forcedGCs() - before; n != 0 {
		t.Errorf("%d collections forced while small calls went on (%d calls in 4.5 s), want none", n, calls)
	}
	// Then idle: the relief comes within its quiet time and a tick or two.
	deadline := time.Now().Add(6 * time.Second)
	for forcedGCs() == before && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if forcedGCs() == before {
		t.Errorf("no relief within 6 s of idleness after the burst")
	}
}
