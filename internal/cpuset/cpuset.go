// Package cpuset parses Linux CPU lists ("0", "0-1", "0,2-3"), reads the
// CPUs this process may run on, pins the whole process to a set of them,
// and splits the available CPUs between a server and its load generator.
//
// Pinning is Linux-only; on other systems Available and Pin return an
// error that says so, while Parse, String and Split work everywhere.
package cpuset

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxCPU is the largest CPU number a Set may hold: the kernel's affinity
// calls take a fixed 1024-bit mask here (CPU_SETSIZE).
const MaxCPU = 1023

// Set is a set of CPU numbers, kept sorted and without duplicates. The zero
// Set is empty.
type Set struct {
	cpus []int
}

// Of returns the set of the given CPUs (in any order, duplicates ignored).
// It panics on a CPU outside 0..MaxCPU: for constants and tests; use Parse
// for input.
func Of(cpus ...int) Set {
	for _, c := range cpus {
		if c < 0 || c > MaxCPU {
			panic(fmt.Sprintf("cpuset.Of: cpu %d is outside 0-%d", c, MaxCPU))
		}
	}
	s := slices.Clone(cpus)
	slices.Sort(s)
	return Set{slices.Compact(s)}
}

// Parse reads a Linux CPU list: comma-separated CPU numbers and inclusive
// ranges, as in "0", "0-1", "0,2-3" (the format of taskset -c and of
// Cpus_allowed_list in /proc/PID/status). Surrounding white space is
// ignored. A CPU named twice, an empty list or element, a reversed range,
// a negative or non-numeric CPU and one above MaxCPU are errors, each
// reported in one line that quotes the input.
func Parse(s string) (Set, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return Set{}, errors.New(`empty CPU list: want CPU numbers and ranges such as "0", "0-1" or "0,2-3"`)
	}
	fail := func(format string, args ...any) (Set, error) {
		return Set{}, fmt.Errorf("CPU list %q: "+format, append([]any{s}, args...)...)
	}
	var cpus []int
	seen := make(map[int]bool)
	for _, part := range strings.Split(in, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return fail("empty element (want numbers and ranges separated by single commas)")
		}
		lo, hi := part, part
		if i := strings.Index(part[1:], "-"); i >= 0 { // part[1:]: a leading "-" is a sign, not a range
			lo, hi = strings.TrimSpace(part[:i+1]), strings.TrimSpace(part[i+2:])
		}
		first, err := parseCPU(lo)
		if err != nil {
			return fail("%v", err)
		}
		last, err := parseCPU(hi)
		if err != nil {
			return fail("%v", err)
		}
		if last < first {
			return fail("range %q runs backwards (want low-high, e.g. %d-%d)", part, last, first)
		}
		for c := first; c <= last; c++ {
			if seen[c] {
				return fail("cpu %d is listed twice", c)
			}
			seen[c] = true
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	return Set{cpus}, nil
}

func parseCPU(s string) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a CPU number (want 0, 1, 2, ...)", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > MaxCPU {
		return 0, fmt.Errorf("cpu %s is above the largest this tool can pin, %d", s, MaxCPU)
	}
	return n, nil
}

// String returns the canonical CPU list: ascending, runs of two or more
// consecutive CPUs as ranges ("0-3,6"), as the kernel prints it. The empty
// set gives "".
func (s Set) String() string {
	var b strings.Builder
	for i := 0; i < len(s.cpus); {
		j := i
		for j+1 < len(s.cpus) && s.cpus[j+1] == s.cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s.cpus[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(s.cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Len returns the number of CPUs in s.
func (s Set) Len() int { return len(s.cpus) }

// CPUs returns the CPU numbers in ascending order (a copy).
func (s Set) CPUs() []int { return slices.Clone(s.cpus) }

// Contains reports whether cpu is in s.
func (s Set) Contains(cpu int) bool {
	_, ok := slices.BinarySearch(s.cpus, cpu)
	return ok
}

// Equal reports whether s and t hold the same CPUs.
func (s Set) Equal(t Set) bool { return slices.Equal(s.cpus, t.cpus) }

// Split divides avail between a server, which gets n CPUs, and its load
// generator, which gets the rest. The server gets the LAST n (the highest
// numbers): CPU 0 is where Linux tends to put more interrupt and
// housekeeping work, and the server's CPU time per call is the figure the
// benchmark reports, so it is kept off CPU 0 when it can be. With 0-3 and
// n=1 the server gets 3 and the load generator 0-2.
//
// n below 1, or n leaving the load generator no CPU, is an error naming
// the --server-cpus flag.
func Split(avail Set, n int) (server, client Set, err error) {
	if n < 1 {
		return Set{}, Set{}, fmt.Errorf("--server-cpus %d: the server needs at least 1 CPU", n)
	}
	if n >= avail.Len() {
		return Set{}, Set{}, fmt.Errorf("--server-cpus %d leaves the load generator no CPU: this process may use %d (%s)",
			n, avail.Len(), avail)
	}
	k := avail.Len() - n
	return Set{slices.Clone(avail.cpus[k:])}, Set{slices.Clone(avail.cpus[:k])}, nil
}

// UnavailableError is Pin's error for a CPU outside Available().
type UnavailableError struct {
	CPU       int // the first requested CPU that is not available
	Available Set // the CPUs this process may use
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("cpu %d is not available: this process may use %s", e.CPU, e.Available)
}

// errNoLinux is what Available and Pin return where they cannot work; it
// matches errors.ErrUnsupported.
type errNoLinux struct{ what string }

func (e errNoLinux) Error() string        { return e.what + " needs Linux" }
func (e errNoLinux) Is(target error) bool { return target == errors.ErrUnsupported }

// check returns an *UnavailableError for the first CPU of s outside avail,
// and an error for an empty s.
func check(s, avail Set) error {
	if s.Len() == 0 {
		return errors.New("no CPUs to pin to")
	}
	for _, c := range s.cpus {
		if !avail.Contains(c) {
			return &UnavailableError{CPU: c, Available: avail}
		}
	}
	return nil
}
