package ownserver

import (
	"fmt"

	"github.com/meteorbench/meteorbench/internal/cpuset"
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
