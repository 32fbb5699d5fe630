// Package fit answers "will this traffic fit my tier?" with a roofline: a
// server with C cores and a link of B bit/s each way carries a mix of rates
// r_i only while sum(r_i × cpu_i) ≤ C and sum(r_i × bytes_i) ≤ B in each
// direction. The costs per call come from cells measured in the tier's
// condition (the server pinned to its CPUs, its link emulated), at the
// traffic's own rates (CPU per call depends on load), or from an earlier
// run's document; Verify checks the predicted saturation by running the
// traffic scaled to it.
package fit

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meteorbench/meteorbench/internal/link"
)

// Tier is a server's resources: CPUs, optionally memory, and optionally a
// link of a bandwidth each way (with a round-trip time to emulate).
type Tier struct {
	Name      string  // as given: "1cpu/2gb/100mbit"
	CPUs      float64 // cores
	MemoryMiB float64 // 0: not given
	Link      link.Spec
}

// ParseTier reads "1cpu", "1cpu/100mbit", "2cpu/4gb/100mbit/20ms": the
// CPUs first, then in any order memory (mb, gb: 2^20 and 2^30 bytes, as
// hosting plans count them), bandwidth (kbit, mbit, gbit per second, each
// way) and a round-trip time to emulate with it (us, ms, s; default none).
// Errors are one line.
func ParseTier(s string) (Tier, error) {
	t := Tier{Name: strings.TrimSpace(s)}
	parts := strings.Split(strings.ToLower(t.Name), "/")
	n, ok := strings.CutSuffix(parts[0], "cpu")
	cpus, err := strconv.ParseFloat(n, 64)
	if !ok || err != nil || !(cpus > 0) || math.IsInf(cpus, 0) {
		return Tier{}, fmt.Errorf("tier %q: want CPUs first, e.g. 1cpu/2gb/100mbit", s)
	}
	t.CPUs = cpus
	var bw, rtt string
	for _, p := range parts[1:] {
		switch {
		case strings.HasSuffix(p, "gb") || strings.HasSuffix(p, "mb"):
			if t.MemoryMiB != 0 {
				return Tier{}, fmt.Errorf("tier %q: memory given twice", s)
			}
			v, err := strconv.ParseFloat(p[:len(p)-2], 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return Tier{}, fmt.Errorf("tier %q: memory %q: want e.g. 512mb or 2gb", s, p)
			}
			if strings.HasSuffix(p, "gb") {
				v *= 1024
			}
			t.MemoryMiB = v
		case strings.HasSuffix(p, "bit"):
			if bw != "" {
				return Tier{}, fmt.Errorf("tier %q: bandwidth given twice", s)
			}
			bw = p
		case strings.HasSuffix(p, "s"):
			if rtt != "" {
				return Tier{}, fmt.Errorf("tier %q: round-trip time given twice", s)
			}
			rtt = p
		default:
			return Tier{}, fmt.Errorf("tier %q: %q is no memory (2gb), bandwidth (100mbit) or round-trip time (20ms)", s, p)
		}
	}
	switch {
	case rtt != "" && bw == "":
		return Tier{}, fmt.Errorf("tier %q: a round-trip time needs a bandwidth (e.g. 100mbit/20ms)", s)
	case bw != "":
		if rtt == "" {
			rtt = "0ms"
		}
		l, err := link.Parse(bw + "/" + rtt)
		if err != nil {
			return Tier{}, fmt.Errorf("tier %q: %w", s, err)
		}
		t.Link = l
	}
	return t, nil
}

// ParseTiers reads a comma-separated list of tiers, each once, and orders
// it smallest first (by CPUs, then bandwidth, then memory).
func ParseTiers(s string) ([]Tier, error) {
	var out []Tier
	for _, p := range strings.Split(s, ",") {
		if strings.TrimSpace(p) == "" {
			continue
		}
		t, err := ParseTier(p)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(o Tier) bool { return o.Name == t.Name }) {
			return nil, fmt.Errorf("tier %q given twice", t.Name)
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, errors.New("no tier given (e.g. 1cpu/100mbit,2cpu/200mbit)")
	}
	slices.SortStableFunc(out, func(a, b Tier) int {
		if c := cmpFloat(a.CPUs, b.CPUs); c != 0 {
			return c
		}
		if c := cmpFloat(a.linkMbit(), b.linkMbit()); c != 0 {
			return c
		}
		return cmpFloat(a.MemoryMiB, b.MemoryMiB)
	})
	return out, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// linkMbit is the tier's bandwidth each way, Mbit/s; +Inf without a link.
func (t Tier) linkMbit() float64 {
	if t.Link.None() {
		return math.Inf(1)
	}
	return float64(t.Link.BitsPerSecond()) / 1e6
}

// HasLink reports whether the tier names a bandwidth.
func (t Tier) HasLink() bool { return !t.Link.None() }

// RTT is the round-trip time the tier's link emulates.
func (t Tier) RTT() time.Duration { return t.Link.RTT() }
