package results

// CPUBreakdown is where one side's CPU went in a cell (the server's, or
// the load generator's), from CPU profiles taken over the cell's measured
// windows (run --profile): each category's share of the profile's samples
// and its CPU per successful call. Unknown says why there is none.
//
// The profiles sample at SampleHz (100 Hz: a sample per 10 ms of CPU), so
// a share of n samples is known to about ±√n samples, and the profiled CPU
// per call (ProfiledUSPerCall, the categories' sum) to about ±1/√Samples
// of itself; CPUUSPerCall is the same windows' CPU as the counters measured
// it (getrusage or /proc), which the sum should meet within that error.
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
// (0..1) and its CPU per successful call.
type CPUShare struct {
	Share     float64 `json:"share"`
	USPerCall float64 `json:"us_per_call"`
	Samples   int64   `json:"samples"`
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
