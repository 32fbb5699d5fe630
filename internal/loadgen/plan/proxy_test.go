package plan_test

import (
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/target"
)

// --proxy sweeps: each protocol directly and behind each proxy, the
// proxy's cells over TLS (it ends there) whatever --tls says, recorded in
// the settings; a proxy in front of anything but the own server, an
// unknown or repeated one, or with a TLS sweep is refused.
func TestProxyPlan(t *testing.T) {
	cfg := plan.Config{Target: target.One("127.0.0.1:1"), OwnServer: true, Scenarios: []api.Scenario{api.Small}, Batches: []int{1},
		Proxies: []string{"none", "nginx"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tlsSweep := range [][]bool{nil, {false}, {true}} {
		c := cfg
		c.TLS = tlsSweep
		var direct, behind int
		for _, k := range c.Cells() {
			switch k.Proxy {
			case "":
				direct++
				if k.TLS != (len(tlsSweep) > 0 && tlsSweep[0]) {
					t.Errorf("--tls %v: direct cell %s", tlsSweep, k.Key())
				}
			case "nginx":
				behind++
				if !k.TLS || !strings.Contains(k.Key(), "/proxy-nginx") {
					t.Errorf("--tls %v: %s: want TLS and the proxy in the key", tlsSweep, k.Key())
				}
			}
		}
		if n := len(api.DefaultProtocols()); direct != n || behind != n {
			t.Errorf("--tls %v: %d direct cells, %d behind nginx, want %d each", tlsSweep, direct, behind, n)
		}
	}
	if s := cfg.WithDefaults().Settings(); strings.Join(s.Proxies, ",") != "none,nginx" {
		t.Errorf("settings proxies %v", s.Proxies)
	}
	for _, tc := range []struct {
		change func(c *plan.Config)
		want   string
	}{
		{func(c *plan.Config) { c.OwnServer = false }, "own server"},
		{func(c *plan.Config) { c.Proxies = []string{"squid"} }, "unknown"},
		{func(c *plan.Config) { c.Proxies = []string{"nginx", "nginx"} }, "twice"},
		{func(c *plan.Config) { c.TLS = []bool{false, true} }, "TLS"},
	} {
		c := cfg
		tc.change(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "proxy") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want a refusal naming the proxy and %q", err, tc.want)
		}
	}
}
