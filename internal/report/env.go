package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// interruptedBanner is shown at the top of a partial result.
const interruptedBanner = "INTERRUPTED — partial results"

// envLines describes the run: versions, machine, target, load, repeats,
// timing and why it stopped, as label/value pairs.
func envLines(r *results.Result) [][2]string {
	e, s := &r.Env, &r.Settings
	lines := [][2]string{
		{"meteorbench", e.MeteorbenchVersion},
		{"Go", fmt.Sprintf("%s (GOEXPERIMENT=%s)", e.GoVersion, goExperiment(e))},
		{"gRPC, protobuf", e.GRPCVersion + ", " + e.ProtobufVersion},
		{"CPU", fmt.Sprintf("%s · %s · GOMAXPROCS=%d", orNA(e.CPUModel), plural(e.NumCPU, "CPU", "CPUs"), e.GOMAXPROCS)},
		{"OS", strings.TrimSpace(e.OS + " " + e.Arch)},
	}
	if e.ServerCPUs != "" {
		lines = append(lines, [2]string{"pinned", fmt.Sprintf("server on CPUs %s · load generator on CPUs %s", e.ServerCPUs, e.ClientCPUs)})
	}
	target := e.Target
	if e.OwnServer {
		target += " (own server child, loopback)"
	}
	lines = append(lines, [2]string{"target", target})
	if len(e.Targets) > 0 { // each protocol at its own address
		var at []string
		for _, p := range api.Protocols() {
			if addr, ok := e.Targets[string(p)]; ok {
				at = append(at, p.Title()+" at "+addr)
			}
		}
		lines = append(lines, [2]string{"addresses", strings.Join(at, " · ")})
	}
	if e.ServerPID != "" {
		lines = append(lines, [2]string{"server CPU", serverCPULine(r)})
	}
	for _, n := range r.NotServed {
		lines = append(lines, [2]string{"not served", fmt.Sprintf("%s: not measured (%s)", n.Name(), n.Why)})
	}
	switch e.LinkEmulator {
	case results.LinkPacket:
		lines = append(lines, [2]string{"link", "packet link: kernel TCP (cubic) and QUIC through TUN devices between two network namespaces and meteorbench's forwarder, measured before the run:"})
		for _, f := range e.LinkFidelity {
			lines = append(lines, [2]string{"link check", f.String()})
		}
	case results.LinkRelay:
		lines = append(lines, [2]string{"link", "TCP relay (no packet loss: the packet link needs root and /dev/net/tun)"})
	}
	lines = append(lines, [2]string{"plan", planLine(s)})
	lines = append(lines, [2]string{"load", loadLine(s)})
	if s.Repeat > 1 {
		lines = append(lines, [2]string{"repeats", repeatLine(r)})
	}
	run := r.Started.UTC().Format("2006-01-02 15:04:05 MST")
	if !r.Finished.IsZero() && r.Finished.After(r.Started) {
		run += ", took " + format.Seconds(r.Finished.Sub(r.Started).Seconds())
	}
	lines = append(lines, [2]string{"run", run})
	if r.Stop != (results.Stop{}) || !r.Finished.IsZero() {
		lines = append(lines, [2]string{"stopped", orNA(r.Stop.String())})
	}
	if len(e.Flags) > 0 {
		lines = append(lines, [2]string{"command", strings.Join(e.Flags, " ")})
	}
	return lines
}

// serverCPULine says where server CPU per call came from when --server-pid
// was given: /proc, in clock ticks, checked against /metrics where both
// were read.
func serverCPULine(r *results.Result) string {
	line := "from /proc/PID/stat of --server-pid " + r.Env.ServerPID + " (user+system CPU of every thread, 10 ms clock ticks; a cell with under 1 s of it is flagged)"
	var worst float64
	for _, c := range r.Cells {
		if c.ServerCPUUSPerCall != nil && c.ServerCPUMetricsUSPerCall != nil && *c.ServerCPUMetricsUSPerCall > 0 {
			worst = max(worst, math.Abs(*c.ServerCPUUSPerCall / *c.ServerCPUMetricsUSPerCall - 1))
		}
	}
	if worst > 0 {
		line += fmt.Sprintf("; the server's /metrics, read over the same windows, differs by at most %s", format.Percent(worst))
	}
	return line
}

func goExperiment(e *results.Env) string {
	if e.GoExperiment == "" {
		return "none"
	}
	return e.GoExperiment
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}

// plural says a count with its noun: "1 CPU", "4 CPUs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// planLine lists what the run was asked to measure.
func planLine(s *results.Settings) string {
	ints := func(v []int) string {
		parts := make([]string, len(v))
		for i, n := range v {
			parts[i] = strconv.Itoa(n)
		}
		return strings.Join(parts, ", ")
	}
	conc := ints(s.Concurrency)
	if len(s.Concurrency) == 0 {
		conc = "following the rate" // a capacity search's probes
	}
	return fmt.Sprintf("protocols %s · scenarios %s · batches %s · concurrency %s",
		format.Names(s.Protocols), format.Names(s.Scenarios), ints(s.Batches), conc)
}

// loadLine describes the load: mode, bounds, warm-up, timeout, connections.
func loadLine(s *results.Settings) string {
	var parts []string
	if s.Mode == results.ModeOpen {
		m := "open loop"
		if s.Rate > 0 {
			m += " at " + format.Rate(s.Rate) + " calls/s per cell"
		}
		parts = append(parts, m+" (latency from the intended start)")
	} else {
		parts = append(parts, "closed loop")
	}
	if s.DurationS > 0 {
		parts = append(parts, format.Seconds(s.DurationS)+" per cell")
	}
	if s.Iterations > 0 {
		parts = append(parts, plural(s.Iterations, "batch", "batches")+" per cell")
	}
	parts = append(parts, "warm-up "+format.Seconds(s.WarmupS))
	if s.TimeoutS > 0 {
		parts = append(parts, "timeout "+format.Seconds(s.TimeoutS))
	}
	if s.Connections > 0 {
		parts = append(parts, plural(s.Connections, "connection", "connections")+" per protocol")
	} else {
		parts = append(parts, "connections: gRPC 1, REST 1 per worker")
	}
	return strings.Join(parts, " · ")
}

// repeatLine says how repeated figures read.
func repeatLine(r *results.Result) string {
	if len(r.Cells) == 0 && len(r.Capacity) > 0 {
		return fmt.Sprintf("%d whole searches, the series interleaved in each; found rates are median [min, max]", r.Settings.Repeat)
	}
	conf := 0.0
	for i := range r.Cells {
		for _, iv := range r.Cells[i].CI {
			if iv.Confidence > 0 {
				conf = iv.Confidence
				break
			}
		}
		if conf > 0 {
			break
		}
	}
	s := fmt.Sprintf("%d per cell, interleaved; figures are median [lo, hi]", r.Settings.Repeat)
	if conf > 0 {
		s += " at " + format.Percent(conf) + " confidence"
	}
	return s
}
