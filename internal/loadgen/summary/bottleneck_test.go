package summary

import (
	"runtime"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/target"
)

// The generator is called the bottleneck when it used most of its own
// cores, or most of the cores it shares with the server and more of them
// than the server; not when the server used more, nor when the server's
// CPU is not on these cores.
func TestGeneratorBottleneck(t *testing.T) {
	own, machine := float64(runtime.GOMAXPROCS(0)), float64(runtime.NumCPU())
	for _, c := range []struct {
		client, server float64
		want           string
	}{
		{client: own, server: -1, want: "the load generator used"},
		{client: 0.5 * own, server: -1},
		{client: 0.6 * machine, server: 0.35 * machine, want: "cores were saturated and the load generator used more CPU than the server"},
		{client: 0.35 * machine, server: 0.6 * machine}, // the server's own limit
		{client: 0.3 * machine, server: 0.3 * machine},  // not saturated
	} {
		got := GeneratorBottleneck(c.client, c.server)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("client %.2f, server %.2f cores: %q, want %q", c.client, c.server, got, c.want)
		}
	}
}

func TestSharesCores(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:8080": true, "localhost:8080": true,
		"10.0.0.7:8080": false, "example.com:443": false, "bad": false,
	} {
		if got := SharesCores(plan.Config{Target: target.One(addr)}); got != want {
			t.Errorf("%s: %v, want %v", addr, got, want)
		}
	}
	if SharesCores(plan.Config{Target: target.One("127.0.0.1:8080"), ServerCPUs: 1}) {
		t.Error("a server pinned apart shares the cores")
	}
}
