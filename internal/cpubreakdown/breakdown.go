// Package cpubreakdown says where a process's CPU went, from its CPU
// profile (runtime/pprof's, as net/http/pprof serves it): every sample is
// put in one of a small fixed set of categories (encoding, decoding,
// HTTP/1.1, HTTP/2 and HPACK, gRPC, TLS, compression, syscalls and
// network, GC, scheduler and runtime, other) by the functions on its
// stack, with ONE table of rules (rules.go), and Of sums them into a
// results.CPUBreakdown per call.
//
// Profiles are read with github.com/google/pprof/profile, the parser the
// go tool pprof itself uses.
package cpubreakdown

import (
	"bytes"
	"cmp"
	"fmt"
	"github.com/meteorbench/meteorbench/internal/format"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/meteorbench/meteorbench/internal/results"
)

// SampleHz is runtime/pprof's CPU sampling rate, which net/http/pprof
// keeps: a sample per 10 ms of CPU.
const SampleHz = 100

// Parse reads a CPU profile as runtime/pprof writes it (gzipped protobuf).
func Parse(b []byte) (*profile.Profile, error) {
	p, err := profile.Parse(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("read CPU profile: %w", err)
	}
	if cpuIndex(p) < 0 {
		return nil, fmt.Errorf("read CPU profile: not a CPU profile (its sample types: %v)", sampleTypes(p))
	}
	return p, nil
}

// Merge sums profiles of the same process (a cell's windows) into one.
func Merge(ps []*profile.Profile) (*profile.Profile, error) {
	if len(ps) == 1 {
		return ps[0], nil
	}
	return profile.Merge(ps)
}

// cpuIndex is the index of the "cpu" (nanoseconds) sample value, -1 if none.
func cpuIndex(p *profile.Profile) int {
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			return i
		}
	}
	return -1
}

func sampleTypes(p *profile.Profile) []string {
	var out []string
	for _, st := range p.SampleType {
		out = append(out, st.Type+"/"+st.Unit)
	}
	return out
}

// Window is one measured window's CPU profiles: the server's and the load
// generator's, or why either is missing.
type Window struct {
	Server, Client       *profile.Profile
	ServerWhy, ClientWhy string
	// ServerSource is the URL the server's profile came from.
	ServerSource string
}

// Tally is a profile's CPU by category.
type Tally struct {
	CPU     map[Category]time.Duration
	Samples map[Category]int64
	// Total is every sample's CPU, N their count.
	Total time.Duration
	N     int64
}

// Count sums p's samples by category (Attribute of each sample's stack,
// inlined frames included, innermost first).
func Count(p *profile.Profile) Tally {
	t := Tally{CPU: map[Category]time.Duration{}, Samples: map[Category]int64{}}
	ci := cpuIndex(p)
	if ci < 0 {
		return t
	}
	var fns []string
	for _, s := range p.Sample {
		fns = fns[:0]
		for _, loc := range s.Location {
			if len(loc.Line) == 0 {
				fns = append(fns, "") // unsymbolised (JIT code): its caller's
			}
			for _, l := range loc.Line { // innermost (inlined) first
				name := ""
				if l.Function != nil {
					name = l.Function.Name
				}
				fns = append(fns, name)
			}
		}
		cat := Attribute(fns)
		d := time.Duration(s.Value[ci])
		n := int64(1)
		if ci > 0 {
			n = s.Value[0] // samples/count
		}
		t.CPU[cat] += d
		t.Samples[cat] += n
		t.Total += d
		t.N += n
	}
	return t
}

// Of is the breakdown of tally t over calls successful calls: each
// category's share of the profiled CPU and its CPU per call. cpuUS, when
// not nil, is the counters' CPU per call over the same windows: then the
// categories' CPU per call are their shares of it (they add up to what
// the counters measured), and Coverage says how much of it the profile
// saw. Go's profiler misses CPU: since Go 1.18 each thread has its own
// CPU timer (timer_create), which Linux checks only at the scheduler's
// tick, and a check that finds several periods elapsed sends one signal,
// one sample (the runtime ignores si_overrun). A thread that works in
// short bursts between sleeps is seen less; a rate above the tick's
// (500 Hz against HZ=250) loses about half of everything (docs/why.md).
func Of(t Tally, calls int64, cpuUS *float64) *results.CPUBreakdown {
	b := &results.CPUBreakdown{Samples: t.N, SampleHz: SampleHz, Calls: calls, CPUUSPerCall: cpuUS}
	if t.N == 0 || t.Total <= 0 {
		b.Unknown = "the profile has no sample (under 10 ms of CPU: measure longer)"
		return b
	}
	b.Categories = map[string]results.CPUShare{}
	for _, c := range Categories {
		d, ok := t.CPU[c]
		if !ok {
			continue
		}
		s := results.CPUShare{Share: float64(d) / float64(t.Total), Samples: t.Samples[c]}
		if calls > 0 {
			s.USPerCall = float64(d) / 1e3 / float64(calls)
		}
		b.Categories[string(c)] = s
	}
	if calls > 0 {
		b.ProfiledUSPerCall = float64(t.Total) / 1e3 / float64(calls)
		if cpuUS != nil && *cpuUS > 0 {
			cov := b.ProfiledUSPerCall / *cpuUS
			b.Coverage = &cov
			for k, s := range b.Categories {
				s.USPerCall = s.Share * *cpuUS
				b.Categories[k] = s
			}
		}
	}
	return b
}

// Ordered is b's categories in display order, those of at least min
// share (0: all).
func Ordered(b *results.CPUBreakdown, min float64) []Category {
	var out []Category
	for _, c := range Categories {
		if s, ok := b.Categories[string(c)]; ok && s.Share >= min && s.Samples > 0 {
			out = append(out, c)
		}
	}
	return out
}

// Biggest is b's category of the largest share.
func Biggest(b *results.CPUBreakdown) Category {
	var best Category
	for _, c := range Categories {
		if s, ok := b.Categories[string(c)]; ok && (best == "" || s.Share > b.Categories[string(best)].Share) {
			best = c
		}
	}
	return best
}

// Summary is b in one line: "encoding 61% 2.1 ms/call, syscalls+net 20% ...",
// largest first, the categories of at least min share; or why it is unknown.
func Summary(b *results.CPUBreakdown, min float64) string {
	if b == nil {
		return "no profile"
	}
	if !b.Known() {
		return "unknown: " + b.Unknown
	}
	cats := Ordered(b, min)
	slices.SortStableFunc(cats, func(x, y Category) int {
		return cmp.Compare(b.Categories[string(y)].Share, b.Categories[string(x)].Share)
	})
	parts := make([]string, len(cats))
	for i, c := range cats {
		s := b.Categories[string(c)]
		parts[i] = fmt.Sprintf("%s %s %s/call", c.Label(), format.Percent(s.Share), format.US(s.USPerCall))
	}
	return strings.Join(parts, ", ")
}
