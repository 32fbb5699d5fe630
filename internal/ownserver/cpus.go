package ownserver

import (
	"fmt"

	"github.com/meteorbench/meteorbench/internal/cpuset"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
)

// Auto asks DefaultCPUs for the own server's CPUs.
const Auto = -1

// DefaultCPUs is the number of CPUs the own server is pinned to by
// default: half the CPUs this process may use, the load generator getting
// the other half, in closed loop. Measured on a 2-core VM, five
// interleaved runs of small and large over REST and gRPC, the gRPC/REST
// calls/s ratio spread (max/min) 1.10-1.12 pinned against 1.27-1.35
// unpinned. Not in open loop: its schedule needs the load generator to
// wake on time, and on one CPU shared with other work it did not
// (idle-wait lateness p99 20 ms pinned against 1.2 ms unpinned at load
// average 5; 724 of 900 gRPC calls late at 300/s). No pinning against
// another server, on a single CPU, or where the platform cannot pin.
func DefaultCPUs(ownServer, openLoop bool) int {
	avail, err := cpuset.Available()
	if !ownServer || openLoop || err != nil || avail.Len() < 2 {
		return 0
	}
	return avail.Len() / 2
}

// SplitCPUs gives the own server n of the CPUs this process may use and
// the load generator the others.
func SplitCPUs(n int) (server, client cpuset.Set, err error) {
	if n < 0 {
		return server, client, fmt.Errorf("--server-cpus %d: must not be negative", n)
	}
	avail, err := cpuset.Available()
	if err != nil {
		return server, client, fmt.Errorf("--server-cpus: %w", err)
	}
	return cpuset.Split(avail, n)
}

// Pin sets --server-cpus n on cfg: the own server's CPUs and the load
// generator's (DefaultCPUs when n is Auto; 0: no pinning). A cfg with a
// target has no own server to pin. openLoop is a run with a rate or a
// capacity search.
func Pin(cfg *plan.Config, n int, openLoop bool) error {
	if n == Auto {
		n = DefaultCPUs(cfg.Target.IsZero(), openLoop)
	}
	if n == 0 {
		return nil
	}
	if !cfg.Target.IsZero() {
		return fmt.Errorf("--server-cpus %d pins run's own server: with --target, start the server with 'meteorbench serve --cpus LIST' on its machine", n)
	}
	srv, client, err := SplitCPUs(n)
	if err != nil {
		return err
	}
	cfg.ServerCPUs = n
	cfg.ServerCPUList, cfg.ClientCPUList = srv.String(), client.String()
	return nil
}
