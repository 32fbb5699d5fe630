// Package link emulates a network link — a bandwidth, a round-trip time,
// and optionally packet loss (random or in bursts), jitter and reordering —
// between the load generator and its target, the same for every protocol.
//
// A Spec is parsed from text ("100mbit/20ms", "50mbit/80ms/1%loss/5msjitter",
// a preset such as "vps", or "none"). Two emulators carry it:
//
//   - Packet (packet.go): the load generator and the server in network
//     namespaces of their own, joined by TUN devices and a user-space
//     forwarder that delays, drops, reorders, jitters and rate-limits IP
//     packets, so the kernel's TCP and QUIC on both ends meet real loss.
//     It needs root and /dev/net/tun (package link/netns).
//   - Relay: listens on 127.0.0.1 and forwards each TCP connection to the
//     target through an emulated bandwidth and delay, with no loss (see
//     Relay for the model and its limits); what a run falls back to.
package link

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Spec is an emulated link: a bandwidth shared by all connections in each
// direction, a round-trip time (half of it each way), and the packet-level
// impairments, the same each way: a loss rate (random, or in bursts of a
// mean length: a Gilbert-Elliott chain), a jitter (each packet's one-way
// delay drawn uniformly within ±jitter, never reordering) and a reordering
// rate (that share of packets delivered after the packet behind them). The
// zero Spec is no emulation ("none"). Specs are comparable with ==.
type Spec struct {
	bps     int64         // bits per second, each direction; 0 for none
	rtt     time.Duration // round-trip time
	loss    int64         // packets lost per million, each direction
	burst   float64       // mean length of a loss burst, packets; 0: random loss
	jitter  time.Duration // each way
	reorder int64         // packets delivered late per million, each direction
}

// Limits of a Spec: the relay is in-process and loopback-backed, so links
// faster than a few Gbit/s measure the relay, not the link; below 64
// kbit/s a full-size packet takes longer than 0.2 s to send.
const (
	MinBitsPerSecond = 64_000         // 64kbit
	MaxBitsPerSecond = 10_000_000_000 // 10gbit
	MaxRTT           = 10 * time.Second
	MaxLoss          = 0.5 // 50%
	MaxReorder       = 0.5
	MaxBurst         = 1000 // packets
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
		return Spec{}, fmt.Errorf("bandwidth %d bit/s: must be from 64kbit to 10gbit", bitsPerSecond)
	case rtt < 0 || rtt > MaxRTT:
		return Spec{}, fmt.Errorf("round-trip time %v: must be from 0 to %v", rtt, MaxRTT)
	case rtt%time.Microsecond != 0:
		return Spec{}, fmt.Errorf("round-trip time %v: must be a whole number of microseconds", rtt)
	}
	return s, nil
}

// WithImpairments returns s with packet loss (a share, 0 to MaxLoss, lost
// in bursts of burst packets on average: 0 or 1 for random loss), jitter
// (0 to half the RTT) and reordering (a share, 0 to MaxReorder), checked
// like Parse. s must not be none.
func (s Spec) WithImpairments(loss, burst float64, jitter time.Duration, reorder float64) (Spec, error) {
	bad := func(v float64, hi float64) bool { return !(v >= 0 && v <= hi) } // NaN is bad
	switch {
	case s.None():
		return Spec{}, errors.New("loss, jitter and reordering need a bandwidth and a round-trip time")
	case bad(loss, MaxLoss):
		return Spec{}, fmt.Errorf("loss %s: must be from 0%% to 50%%", percent(loss))
	case bad(burst, MaxBurst) || (burst > 0 && burst < 1):
		return Spec{}, fmt.Errorf("burst %g: must be a mean burst length from 1 to %d packets", burst, MaxBurst)
	case burst > 1 && loss == 0:
		return Spec{}, errors.New("a loss burst needs a loss rate (1%loss/4burst)")
	case jitter < 0 || jitter > s.rtt/2:
		return Spec{}, fmt.Errorf("jitter %v: must be from 0 to half the round-trip time (%v)", jitter, s.rtt/2)
	case jitter%time.Microsecond != 0:
		return Spec{}, fmt.Errorf("jitter %v: must be a whole number of microseconds", jitter)
	case bad(reorder, MaxReorder):
		return Spec{}, fmt.Errorf("reordering %s: must be from 0%% to 50%%", percent(reorder))
	}
	if burst <= 1 {
		burst = 0
	}
	s.loss, s.burst, s.jitter, s.reorder = ppm(loss), burst, jitter, ppm(reorder)
	if s.loss == 0 {
		s.burst = 0
	}
	return s, nil
}

// Parse reads a link: "none" (or ""), a preset name (see Presets), or
// BANDWIDTH/RTT[/IMPAIRMENT...], where BANDWIDTH is a number with kbit,
// mbit or gbit (bits per second, multiples of 1000: 100mbit = 10^8 bit/s)
// and RTT a number with us, ms or s ("100mbit/20ms", "1.5mbit/0.5ms"). The
// impairments, each at most once, are P%loss (random packet loss), Nburst
// (with a loss: in bursts of N packets on average), Dmsjitter (also us or
// s) and P%reorder: "50mbit/80ms/1%loss/5msjitter". Errors are one line.
func Parse(text string) (Spec, error) {
	t := strings.ToLower(strings.TrimSpace(text))
	if t == "" || t == "none" {
		return Spec{}, nil
	}
	if s, ok := Presets[t]; ok {
		return s, nil
	}
	parts := strings.Split(t, "/")
	if len(parts) < 2 {
		return Spec{}, fmt.Errorf("link %q: want none, a preset (%s) or BANDWIDTH/RTT such as 100mbit/20ms (then /1%%loss, /4burst, /5msjitter, /1%%reorder)", text, strings.Join(PresetNames, ", "))
	}
	bw, rt := parts[0], parts[1]
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
	if len(parts) == 2 {
		return s, nil
	}
	var loss, burst, reorder float64
	var jitter time.Duration
	seen := map[string]bool{}
	for _, p := range parts[2:] {
		var name string
		var err error
		switch {
		case strings.HasSuffix(p, "%loss"):
			name = "loss"
			loss, err = parsePercent(strings.TrimSuffix(p, "%loss"))
		case strings.HasSuffix(p, "%reorder"):
			name = "reorder"
			reorder, err = parsePercent(strings.TrimSuffix(p, "%reorder"))
		case strings.HasSuffix(p, "burst"):
			name = "burst"
			burst, err = parsePlain(strings.TrimSuffix(p, "burst"))
		case strings.HasSuffix(p, "jitter"):
			name = "jitter"
			var v int64
			v, err = parseUnit(strings.TrimSuffix(p, "jitter"), rttUnits)
			jitter = time.Duration(v)
		default:
			return Spec{}, fmt.Errorf("link %q: %q: want P%%loss, Nburst, Dmsjitter or P%%reorder", text, p)
		}
		if err != nil {
			return Spec{}, fmt.Errorf("link %q: %s: %w", text, name, err)
		}
		if seen[name] {
			return Spec{}, fmt.Errorf("link %q: %s given twice", text, name)
		}
		seen[name] = true
	}
	s, err = s.WithImpairments(loss, burst, jitter, reorder)
	if err != nil {
		return Spec{}, fmt.Errorf("link %q: %w", text, err)
	}
	return s, nil
}

// parsePercent reads a plain non-negative number of percent as a share.
func parsePercent(num string) (float64, error) {
	v, err := parsePlain(num)
	return v / 100, err
}

// parsePlain reads a plain non-negative decimal number.
func parsePlain(num string) (float64, error) {
	v, err := strconv.ParseFloat(num, 64)
	if num == "" || err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || strings.ContainsAny(num, "eExX_+-") {
		return 0, fmt.Errorf("%q is not a plain non-negative number", num)
	}
	return v, nil
}

// ppm is a share in parts per million, the resolution of a Spec's rates.
func ppm(v float64) int64 { return int64(math.Round(v * 1e6)) }

// percent writes a share as percent: "1%", "0.5%".
func percent(v float64) string { return percentPPM(ppm(v)) }

// percentPPM writes parts per million as percent: "1%", "0.0001%".
func percentPPM(v int64) string {
	return strconv.FormatFloat(float64(v)/1e4, 'f', -1, 64) + "%"
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

// Loss is the share of packets lost in each direction.
func (s Spec) Loss() float64 { return float64(s.loss) / 1e6 }

// Burst is the mean length of a loss burst in packets; 0 for random loss.
func (s Spec) Burst() float64 { return s.burst }

// Jitter is how far a packet's one-way delay may be from RTT/2, each way.
func (s Spec) Jitter() time.Duration { return s.jitter }

// Reorder is the share of packets delivered after the packet behind them.
func (s Spec) Reorder() float64 { return float64(s.reorder) / 1e6 }

// Impaired reports whether s has packet-level impairments (loss, jitter,
// reordering), which only the packet link emulates.
func (s Spec) Impaired() bool { return s.loss > 0 || s.jitter > 0 || s.reorder > 0 }

// Clean is s without its impairments: the same bandwidth and RTT.
func (s Spec) Clean() Spec { return Spec{bps: s.bps, rtt: s.rtt} }

// String is the canonical text, which Parse reads back to the same Spec:
// "none", "100mbit/20ms", "1500kbit/500us", "50mbit/80ms/1%loss/5msjitter"
// (presets are written as numbers: "vps" is "100mbit/20ms"; an impairment
// of zero is left out).
func (s Spec) String() string {
	if s.None() {
		return "none"
	}
	out := formatUnit(s.bps, bandwidthUnits) + "/" + formatUnit(int64(s.rtt), rttUnits)
	if s.loss > 0 {
		out += "/" + percentPPM(s.loss) + "loss"
	}
	if s.burst > 0 {
		out += "/" + strconv.FormatFloat(s.burst, 'g', -1, 64) + "burst"
	}
	if s.jitter > 0 {
		out += "/" + formatUnit(int64(s.jitter), rttUnits) + "jitter"
	}
	if s.reorder > 0 {
		out += "/" + percentPPM(s.reorder) + "reorder"
	}
	return out
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
	out := b + ", " + r + " RTT"
	if s.loss > 0 {
		out += ", " + percentPPM(s.loss) + " loss"
		if s.burst > 0 {
			out += " in bursts of " + strconv.FormatFloat(s.burst, 'g', -1, 64)
		}
	}
	if s.jitter > 0 {
		out += ", ±" + strconv.FormatFloat(float64(s.jitter)/1e6, 'g', -1, 64) + " ms jitter"
	}
	if s.reorder > 0 {
		out += ", " + percentPPM(s.reorder) + " reordered"
	}
	return out
}

// Compare orders links from the best to the worst: none first, then by
// bandwidth, highest first, then by round-trip time, shortest first, then
// by loss, burst length, jitter and reordering, least first. It
// returns -1, 0 or +1.
func Compare(a, b Spec) int {
	switch {
	case a == b:
		return 0
	case a.None():
		return -1
	case b.None():
		return 1
	}
	return cmp.Or(-cmp.Compare(a.bps, b.bps), cmp.Compare(a.rtt, b.rtt), cmp.Compare(a.loss, b.loss),
		cmp.Compare(a.burst, b.burst), cmp.Compare(a.jitter, b.jitter), cmp.Compare(a.reorder, b.reorder))
}

// ErrNoTarget is returned by Listen without a target address.
var ErrNoTarget = errors.New("link: no target")

// WithBaselines is specs with, before each impaired link (loss, jitter,
// reordering), the same link without its impairments unless specs has it:
// what the impairment did is told against it.
func WithBaselines(specs []Spec) []Spec {
	var out []Spec
	for _, s := range specs {
		if c := s.Clean(); s.Impaired() && !slices.Contains(specs, c) && !slices.Contains(out, c) {
			out = append(out, c)
		}
		out = append(out, s)
	}
	return out
}
