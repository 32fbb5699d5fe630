package server

// The memory the server may use by default: a share of its cgroup's limit
// (cgroup v2 memory.max, or v1 memory.limit_in_bytes, the smallest on the
// path from the process's cgroup to the root), or of the machine's memory
// when no cgroup limits it.

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Shares of the detected memory that DefaultMemoryLimit gives the server:
// most of a cgroup's limit (the cgroup is there for this process; the rest
// is the runtime's overshoot and what the kernel charges the cgroup), and
// half of a machine's memory (shared with others).
const (
	cgroupShareNum, cgroupShareDen     = 3, 4
	physicalShareNum, physicalShareDen = 1, 2
)

// DefaultMemoryLimit is Config.MemoryLimit's default: 3/4 of the process's
// cgroup memory limit when there is one, else 1/2 of physical memory; 0 when
// neither can be read. source says where it came from.
func DefaultMemoryLimit() (limit int64, source string) {
	if l, ok := cgroupLimit("/proc/self/cgroup", "/sys/fs/cgroup"); ok {
		return l / cgroupShareDen * cgroupShareNum, "3/4 of the cgroup's memory limit"
	}
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err == nil && si.Totalram > 0 {
		total := int64(si.Totalram) * int64(si.Unit)
		return total / physicalShareDen * physicalShareNum, "1/2 of physical memory"
	}
	return 0, "unknown"
}

// noLimit is above any real limit: cgroup v1 writes "unlimited" as a
// number near 2^63.
const noLimit = 1 << 62

// cgroupLimit reads the memory limit of the cgroup named in procCgroup
// (/proc/self/cgroup) under root (/sys/fs/cgroup), v2 or v1.
func cgroupLimit(procCgroup, root string) (int64, bool) {
	f, err := os.Open(procCgroup)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	best := int64(noLimit)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir, file string
		switch {
		case parts[0] == "0" && parts[1] == "": // v2
			dir, file = root, "memory.max"
		case hasController(parts[1], "memory"): // v1
			dir, file = filepath.Join(root, "memory"), "memory.limit_in_bytes"
		default:
			continue
		}
		// The limit that applies is the smallest on the path to the root.
		for p := filepath.Clean("/" + parts[2]); ; p = filepath.Dir(p) {
			if l, ok := readLimit(filepath.Join(dir, p, file)); ok {
				best = min(best, l)
			}
			if p == "/" {
				break
			}
		}
	}
	return best, best < noLimit
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads a limit file: a number of bytes, or "max" (none).
func readLimit(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= noLimit {
		return 0, false
	}
	return n, true
}
