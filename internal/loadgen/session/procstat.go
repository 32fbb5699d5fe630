package session

// Server CPU of a local process (--server-pid): utime+stime of
// /proc/PID/stat, which count every thread of the process, for any server
// on this machine, Docker's included (docker inspect -f '{{.State.Pid}}').

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/meteorbench/meteorbench/internal/loadgen/summary"
)

// cpuSampler reads a server's counters around a cell: its /metrics, or its
// process's /proc entry.
type cpuSampler interface {
	sample(ctx context.Context) (summary.ServerSample, error)
	close()
}

func (s *scraper) sample(ctx context.Context) (summary.ServerSample, error) {
	ss, err := s.scrape(ctx)
	ss.Source = summary.SourceMetrics
	return ss, err
}

// procSampler reads the CPU and memory of a protocol's server processes
// from /proc, summed (--server-pid P1+P2: a proxy and the server behind
// it), and, when the server also serves meteorbench's /metrics, those
// too: its request counters check the calls, and its CPU counter the
// /proc figure (of one process only).
type procSampler struct {
	pids    []int
	metrics *scraper // nil when not served
}

func (p *procSampler) sample(ctx context.Context) (summary.ServerSample, error) {
	ss := summary.ServerSample{Source: summary.SourceProc, MetricsCPU: -1}
	for _, pid := range p.pids {
		cpu, err := ProcCPU(pid)
		if err != nil {
			return summary.ServerSample{}, err
		}
		rss, peak := procMemory(pid)
		ss.CPU, ss.RSS, ss.PeakRSS = ss.CPU+cpu, ss.RSS+rss, ss.PeakRSS+peak
	}
	if p.metrics != nil {
		if m, err := p.metrics.scrape(ctx); err == nil {
			ss.Requests, ss.Procs, ss.Heap = m.Requests, m.Procs, m.Heap
			if len(p.pids) == 1 {
				ss.MetricsCPU = m.CPU
			}
		}
	}
	return ss, nil
}

func (p *procSampler) close() {
	if p.metrics != nil {
		p.metrics.close()
	}
}

// ErrNoProcess is the error (wrapped) of a --server-pid that names no
// process on this machine.
var ErrNoProcess = errors.New("no such process")

// ProcCPU is the CPU time process pid has used, user and system, all its
// threads: utime+stime of /proc/PID/stat, in clock ticks.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("--server-pid %d: %w on this machine", pid, ErrNoProcess)
	}
	if err != nil {
		return 0, fmt.Errorf("--server-pid %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses: the fields after it start past the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("--server-pid %d: /proc/%d/stat unreadable", pid, pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("--server-pid %d: /proc/%d/stat has %d fields", pid, pid, len(f)+2)
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("--server-pid %d: /proc/%d/stat: utime %q, stime %q", pid, pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * summary.ClockTick, nil
}

// TreeCPU is the CPU time process pid and every process under it have
// used (a proxy's: nginx's master and its workers), read as ProcCPU
// reads one. A child that ended since is no longer counted, so a proxy's
// CPU is read around a cell whose processes live through it.
func TreeCPU(pid int) (time.Duration, error) {
	total, err := ProcCPU(pid)
	if err != nil {
		return 0, err
	}
	for _, c := range children(pid) {
		if cpu, err := TreeCPU(c); err == nil { // one that just ended is not counted
			total += cpu
		}
	}
	return total, nil
}

// children are the processes whose parent is pid, from /proc/*/stat.
func children(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		// f[0] is field 3 (state), f[1] field 4 (ppid).
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, id)
		}
	}
	return out
}

// procMemory is a process's resident set now and at its peak, in bytes,
// from /proc/PID/status (VmRSS, VmHWM); 0 when unknown.
func procMemory(pid int) (rss, peak float64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(value)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		switch name {
		case "VmRSS":
			rss = kb * 1024
		case "VmHWM":
			peak = kb * 1024
		}
	}
	return rss, peak
}
