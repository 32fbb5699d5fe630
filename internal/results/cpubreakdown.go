package results

// CPUBreakdown is where one side's CPU went in a cell (the server's, or
// the load generator's), from CPU profiles taken over the cell's measured
// windows (run --profile): each category's share of the profile's samples
// and its CPU per successful call. Unknown says why there is none.
//
// The profiles sample at SampleHz (100 Hz: a sample per 10 ms of CPU), so
// a share of n samples is known to about ±√n samples, and the profiled CPU
// per call (ProfiledUSPerCall) to about ±1/√Samples of itself;
// CPUUSPerCall is the same windows' CPU as the counters measured it
// (getrusage or /proc). Go's profiler also misses CPU, more on a busy
// machine and for threads that work in short bursts (Coverage), so the
// categories' µs per call are their shares of the counters' figure.
type CPUBreakdown struct {
	// Categories are the shares, by category name (cpubreakdown.Categories:
	// encode, decode, http1, http2, grpc, tls, compression, syscall_net,
	// gc, runtime, other); a category without a sample is left out.
	Categories map[string]CPUShare `json:"categories,omitempty"`
	// Samples is the profiles' sample count, SampleHz their rate.
	Samples  int64 `json:"samples,omitempty"`
	SampleHz int64 `json:"sample_hz,omitempty"`
	// Calls are the successful calls of the profiled windows.
	Calls int64 `json:"calls,omitempty"`
	// ProfiledUSPerCall is the profiled CPU per call (the categories' sum);
	// CPUUSPerCall the counters' CPU per call over the same windows.
	ProfiledUSPerCall float64  `json:"profiled_us_per_call,omitempty"`
	CPUUSPerCall      *float64 `json:"cpu_us_per_call,omitempty"`
	// Coverage, when the counters are known, is the profiled CPU over the
	// counters' (ProfiledUSPerCall / CPUUSPerCall): Go's profiler misses
	// some CPU (0.8-0.92 on a busy 2-core VM, docs/why.md), and then each
	// category's USPerCall is its share of the counters' CPU per call, so
	// that they add up to what was measured; 1 - Coverage is the CPU the
	// profile did not see, spread over the categories by their shares.
	Coverage *float64 `json:"coverage,omitempty"`
	// Windows is how many of the cell's windows were profiled.
	Windows int `json:"windows,omitempty"`
	// Source is where the profiles came from: "load generator" (runtime/pprof
	// in this process), or the server's profile URL.
	Source string `json:"source,omitempty"`
	// File is the saved profile (run --profile DIR), for go tool pprof.
	File string `json:"file,omitempty"`
	// Unknown, when set, says why there is no breakdown.
	Unknown string `json:"unknown,omitempty"`
}

// CPUShare is one category of a CPUBreakdown: its share of the samples
// (0..1) and its CPU per successful call (of the counters' CPU when they
// are known, else of the profile's).
type CPUShare struct {
	Share     float64 `json:"share"`
	USPerCall float64 `json:"us_per_call"`
	Samples   int64   `json:"samples"`
}

// USPerCall is the CPU per call the categories add up to: the counters'
// when known, else the profile's own.
func (b *CPUBreakdown) USPerCall() float64 {
	if b.Coverage != nil && b.CPUUSPerCall != nil {
		return *b.CPUUSPerCall
	}
	return b.ProfiledUSPerCall
}

// Known reports whether b holds a breakdown (not nil, not unknown).
func (b *CPUBreakdown) Known() bool { return b != nil && b.Unknown == "" && b.Samples > 0 }

// ProfilingCost is what profiling cost a run (run --profile with repeats:
// windows alternate profiled and not, interleaved): the median, over the
// cells that had both, of the profiled windows' median over the others',
// minus one (0.03: 3% more). Nil fields were not measured.
type ProfilingCost struct {
	ServerCPUPerCall *float64 `json:"server_cpu_per_call,omitempty"`
	ClientCPUPerCall *float64 `json:"client_cpu_per_call,omitempty"`
	P50              *float64 `json:"p50,omitempty"`
	// Cells is how many cells the medians are over.
	Cells int `json:"cells"`
	// Note says how it was measured, or why not.
	Note string `json:"note"`
}
