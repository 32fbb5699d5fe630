package summary

import (
	"fmt"
	"net"
	"runtime"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
)

// A cell says the load generator may have been its bottleneck when the
// generator used GeneratorShare of its own cores, or the generator and the
// server together used MachineShare of the cores they share.
const (
	GeneratorShare = 0.8
	MachineShare   = 0.9
)

// GeneratorBottleneck says why the load generator's CPU may have limited a
// cell ("" when it did not), from the cores it used (clientCores, by
// getrusage) and, when the server shares this machine's cores, the cores
// the server used (serverCores; negative when it does not share them or
// is unknown). Both rules come from figures seen here: small REST on the
// 2-core machine, own server unpinned, reached p99 over 50 ms at 13,400
// calls/s with the generator on 1.2 cores and the server on 0.6: the
// server, with the machine to itself, would have sustained more.
func GeneratorBottleneck(clientCores, serverCores float64) string {
	own := runtime.GOMAXPROCS(0) // its cores; pinned, its share (cpuset)
	if clientCores >= GeneratorShare*float64(own) {
		return fmt.Sprintf("the load generator used %.1f of its %d cores", clientCores, own)
	}
	machine := runtime.NumCPU()
	if serverCores >= 0 && clientCores+serverCores >= MachineShare*float64(machine) && clientCores > serverCores {
		return fmt.Sprintf("the machine's %d cores were saturated and the load generator used more CPU than the server (%.2f vs %.2f cores)", machine, clientCores, serverCores)
	}
	return ""
}

// SharesCores says whether the target's server runs on this machine's
// cores alongside the load generator: a loopback target (the own server
// among them) not pinned apart from it.
func SharesCores(cfg plan.Config) bool {
	if cfg.ServerCPUs > 0 {
		return false
	}
	addrs := cfg.Addresses(api.Protocols()) // a protocol without an address has none
	for _, a := range addrs {
		if !loopback(a.Addr) {
			return false
		}
	}
	return len(addrs) > 0
}

// loopback reports whether host:port is on this machine's loopback.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
