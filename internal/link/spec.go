// Package link emulates a network link — a bandwidth and a round-trip time —
// between the load generator and its target, the same for every protocol.
//
// A Spec is parsed from text ("100mbit/20ms", a preset such as "vps", or
// "none"); a Relay listens on 127.0.0.1 and forwards each connection to the
// target through the emulated link (see Relay for the model and its limits).
package link

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Spec is an emulated link: a bandwidth shared by all connections in each
// direction, and a round-trip time (half of it each way). The zero Spec is
// no emulation ("none").
type Spec struct {
	bps int64         // bits per second, each direction; 0 for none
	rtt time.Duration // round-trip time
}

// Limits of a Spec: the relay is in-process and loopback-backed, so links
// faster than a few Gbit/s measure the relay, not the link.
const (
	MinBitsPerSecond = 1_000          // 1kbit
	MaxBitsPerSecond = 10_000_000_000 // 10gbit
	MaxRTT           = 10 * time.Second
)

// Presets are the named links, with their numbers.
var Presets = map[string]Spec{
	"lan":    {bps: 1_000_000_000, rtt: 500 * time.Microsecond}, // 1gbit/500us: a data-centre LAN
	"vps":    {bps: 100_000_000, rtt: 20 * time.Millisecond},    // 100mbit/20ms: a small VPS from a nearby client
	"wan":    {bps: 20_000_000, rtt: 80 * time.Millisecond},     // 20mbit/80ms: across a continent
	"mobile": {bps: 10_000_000, rtt: 50 * time.Millisecond},     // 10mbit/50ms: a phone on a 4G network
}

// PresetNames lists the presets in a fixed order, for help texts.
var PresetNames = []string{"lan", "vps", "wan", "mobile"}

// New returns the link of bitsPerSecond and rtt, checked like Parse.
func New(bitsPerSecond int64, rtt time.Duration) (Spec, error) {
	s := Spec{bps: bitsPerSecond, rtt: rtt}
	switch {
	case bitsPerSecond < MinBitsPerSecond || bitsPerSecond > MaxBitsPerSecond:
		return Spec{}, fmt.Errorf("bandwidth %d bit/s: must be from 1kbit to 10gbit", bitsPerSecond)
	case rtt < 0 || rtt > MaxRTT:
		return Spec{}, fmt.Errorf("round-trip time %v: must be from 0 to %v", rtt, MaxRTT)
	case rtt%time.Microsecond != 0:
		return Spec{}, fmt.Errorf("round-trip time %v: must be a whole number of microseconds", rtt)
	}
	return s, nil
}

// Parse reads a link: "none" (or ""), a preset name (see Presets), or
// BANDWIDTH/RTT, where BANDWIDTH is a number with kbit, mbit or gbit (bits
// per second, multiples of 1000: 100mbit = 10^8 bit/s) and RTT a number
// with us, ms or s ("100mbit/20ms", "1.5mbit/0.5ms"). Errors are one line.
func Parse(text string) (Spec, error) {
	t := strings.ToLower(strings.TrimSpace(text))
	if t == "" || t == "none" {
		return Spec{}, nil
	}
	if s, ok := Presets[t]; ok {
		return s, nil
	}
	bw, rt, ok := strings.Cut(t, "/")
	if !ok {
		return Spec{}, fmt.Errorf("link %q: want none, a preset (%s) or BANDWIDTH/RTT such as 100mbit/20ms", text, strings.Join(PresetNames, ", "))
	}
	bps, err := parseUnit(bw, bandwidthUnits)
	if err != nil {
		return Spec{}, fmt.Errorf("link %q: bandwidth: %w", text, err)
	}
	ns, err := parseUnit(rt, rttUnits)
	if err != nil {
		return Spec{}, fmt.Errorf("link %q: round-trip time: %w", text, err)
	}
	s, err := New(bps, time.Duration(ns))
	if err != nil {
		return Spec{}, fmt.Errorf("link %q: %w", text, err)
	}
	return s, nil
}

type unit struct {
	name string
	mult int64
}

// Largest first: String uses the first unit that divides the value.
var (
	bandwidthUnits = []unit{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}}
	rttUnits       = []unit{{"s", 1e9}, {"ms", 1e6}, {"us", 1e3}}
)

// parseUnit reads a non-negative decimal number followed by one of units
// and returns it in base units (bit/s, ns), rounded to the nearest one.
func parseUnit(s string, units []unit) (int64, error) {
	for _, u := range units {
		num, ok := strings.CutSuffix(s, u.name)
		if !ok {
			continue
		}
		// "ms" also ends in "s": the number must then not end in a letter.
		if num == "" || strings.ContainsAny(num[len(num)-1:], "abcdefghijklmnopqrstuvwxyz") {
			continue
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || strings.ContainsAny(num, "eExX_+-") {
			return 0, fmt.Errorf("%q is not a plain non-negative number", num)
		}
		x := math.Round(v * float64(u.mult))
		if x > math.MaxInt64/2 {
			return 0, fmt.Errorf("%q is too large", s)
		}
		return int64(x), nil
	}
	names := make([]string, len(units))
	for i, u := range units {
		names[i] = u.name
	}
	return 0, fmt.Errorf("%q: want a number with %s", s, strings.Join(names, ", "))
}

func formatUnit(v int64, units []unit) string {
	for _, u := range units {
		if v%u.mult == 0 && v != 0 {
			return strconv.FormatInt(v/u.mult, 10) + u.name
		}
	}
	last := units[len(units)-1]
	return strconv.FormatInt(v/last.mult, 10) + last.name
}

// None reports whether s is no emulation.
func (s Spec) None() bool { return s.bps == 0 }

// BitsPerSecond is the link's bandwidth in each direction; 0 for none.
func (s Spec) BitsPerSecond() int64 { return s.bps }

// BytesPerSecond is BitsPerSecond / 8.
func (s Spec) BytesPerSecond() float64 { return float64(s.bps) / 8 }

// RTT is the link's round-trip time.
func (s Spec) RTT() time.Duration { return s.rtt }

// String is the canonical text, which Parse reads back to the same Spec:
// "none", "100mbit/20ms", "1500kbit/500us" (presets are written as numbers:
// "vps" is "100mbit/20ms").
func (s Spec) String() string {
	if s.None() {
		return "none"
	}
	return formatUnit(s.bps, bandwidthUnits) + "/" + formatUnit(int64(s.rtt), rttUnits)
}

// Label names the link in prose: "100 Mbit/s, 20 ms RTT", "no link emulation".
func (s Spec) Label() string {
	if s.None() {
		return "no link emulation"
	}
	bw := float64(s.bps)
	var b string
	switch {
	case s.bps >= 1e9:
		b = strconv.FormatFloat(bw/1e9, 'g', -1, 64) + " Gbit/s"
	case s.bps >= 1e6:
		b = strconv.FormatFloat(bw/1e6, 'g', -1, 64) + " Mbit/s"
	default:
		b = strconv.FormatFloat(bw/1e3, 'g', -1, 64) + " kbit/s"
	}
	var r string
	if s.rtt >= time.Second {
		r = strconv.FormatFloat(s.rtt.Seconds(), 'g', -1, 64) + " s"
	} else {
		r = strconv.FormatFloat(float64(s.rtt)/1e6, 'g', -1, 64) + " ms"
	}
	return b + ", " + r + " RTT"
}

// Compare orders links from the best to the worst: none first, then by
// bandwidth, highest first, then by round-trip time, shortest first. It
// returns -1, 0 or +1.
func Compare(a, b Spec) int {
	switch {
	case a == b:
		return 0
	case a.None():
		return -1
	case b.None():
		return 1
	case a.bps != b.bps:
		if a.bps > b.bps {
			return -1
		}
		return 1
	case a.rtt < b.rtt:
		return -1
	}
	return 1
}

// ErrNoTarget is returned by Listen without a target address.
var ErrNoTarget = errors.New("link: no target")
