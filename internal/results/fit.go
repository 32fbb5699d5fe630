package results

import "github.com/meteorbench/meteorbench/api"

// The resources a tier has (Fit.Utilisation's keys, Fit.Binding).
const (
	ResourceCPU          = "cpu"
	ResourceLinkSent     = "link_sent"     // client to server: the requests
	ResourceLinkReceived = "link_received" // server to client: the answers
	ResourceMemory       = "memory"
)

// FitPlan is what `meteorbench fit` was asked: a tier, a traffic mix and
// the utilisation to stay under, and the answer in prose.
type FitPlan struct {
	Tier     string   `json:"tier"`            // as given: "1cpu/2gb/100mbit"
	Tiers    []string `json:"tiers,omitempty"` // --tiers, smallest first
	Traffic  string   `json:"traffic"`         // "small=800,large=20,post=5"
	Headroom float64  `json:"headroom"`        // the utilisation allowed, 0..1
	SameHost bool     `json:"same_host,omitempty"`
	// Source says where the costs came from: "measured" or the --from file.
	Source string `json:"source"`
	// Verdict is the answer for every protocol, in one paragraph.
	Verdict string `json:"verdict"`
	// LeftOut is what the model does not account for, said once.
	LeftOut string `json:"left_out"`
	// Notes are the caveats of how the costs were measured (a tier scaled
	// from fewer CPUs, figures taken at saturation).
	Notes []string `json:"notes,omitempty"`
}

// Fit is one protocol's fit of a traffic mix into a tier: what the mix
// needs of each resource, at scale 1, and what that leaves.
type Fit struct {
	Protocol api.Protocol `json:"protocol"`
	// CPUCores is the cores the traffic needs: the sum over its scenarios
	// of rate × server CPU per call (plus the client's with same_host).
	CPUCores   float64   `json:"cpu_cores"`
	CPUCoresCI *Interval `json:"cpu_cores_ci,omitempty"`
	// LinkMbit is the traffic's bandwidth each way, Mbit/s (10^6 bit/s),
	// named as a cell's bytes_per_call: sent = requests, received =
	// answers.
	LinkMbit FitLink `json:"link_mbit"`
	// LinkMbitLo and LinkMbitHi are the link's intervals' ends, when the
	// cells were repeated.
	LinkMbitLo *FitLink `json:"link_mbit_lo,omitempty"`
	LinkMbitHi *FitLink `json:"link_mbit_hi,omitempty"`
	// MemoryMiB is the server's peak resident set under the traffic; nil
	// when unknown.
	MemoryMiB *float64 `json:"memory_mib,omitempty"`
	// HeapMiB is the server's Go heap in use at the traffic's end.
	HeapMiB *float64 `json:"heap_mib,omitempty"`
	// Utilisation is each of the tier's resources' share the traffic uses
	// (a tier without a link or memory figure has no such entry).
	Utilisation map[string]float64 `json:"utilisation"`
	// Binding is the resource with the highest utilisation.
	Binding string `json:"binding"`
	// MaxScale is how many times the traffic can grow before the binding
	// resource saturates (memory, which does not grow with the rate, aside).
	MaxScale float64 `json:"max_scale"`
	// Fits is true when every utilisation is within the headroom.
	Fits bool `json:"fits"`
	// SmallestTier is the smallest of FitPlan.Tiers this protocol fits in;
	// "" when none or no list was given.
	SmallestTier string `json:"smallest_tier,omitempty"`
	// MeasuredAt is the server's CPU utilisation while the costs were
	// measured (CPU per call depends on load); nil when unknown.
	MeasuredAt *float64 `json:"measured_at_utilisation,omitempty"`
	// CPUModel is how the server's CPU grows with the traffic's rate,
	// fitted over the loads it was measured at; MaxScale's CPU part comes
	// from it. Nil when the costs came from one load only (then taken as
	// proportional to the rate).
	CPUModel *FitCPUModel `json:"cpu_model,omitempty"`
	// RoomScale is how many times the traffic can grow before a resource
	// reaches the headroom (by the CPU model when there is one).
	RoomScale float64 `json:"room_scale,omitempty"`
	// Extrapolated, when > 1, is how far beyond the highest load measured
	// (CPUModel.MaxRate) the predicted saturation lies, as a ratio of
	// rates: the prediction leans on the model outside what it saw.
	Extrapolated float64 `json:"extrapolated,omitempty"`
	// CostsSuspect says why the costs cannot carry a verdict: the load
	// generator was short of CPU while they were measured. Fits is then
	// false and the verdict says "no verdict".
	CostsSuspect string `json:"costs_suspect,omitempty"`
	// FitVerify is what --verify found; empty without it.
	FitVerify
	// Verdict is this protocol's sentence.
	Verdict string `json:"verdict"`
}

// FitVerify is what fit --verify found of a protocol's predicted
// saturation (fit.Verify fills it).
type FitVerify struct {
	// Refined says why the measured saturation differs from the
	// predicted one by RefineAt or more (PredictionError says by how
	// much): what the saturating probe used against the model.
	Refined string `json:"refined,omitempty"`
	// The traffic's scale at saturation, predicted (Fit.MaxScale) and
	// measured, the prediction's error against the measurement
	// ((predicted-measured)/measured), and the probes.
	PredictedMax    *float64   `json:"predicted_max,omitempty"`
	MeasuredMax     *float64   `json:"measured_max,omitempty"`
	PredictionError *float64   `json:"prediction_error,omitempty"`
	GeneratorBound  string     `json:"generator_bound,omitempty"`
	Probes          []FitProbe `json:"probes,omitempty"`
}

// FitCPUModel is the server's CPU (cores busy) as a function of the
// traffic's rate, calls/s of the whole mix: FixedCores + PerCallUS × 1e-6
// × rate, fitted by least squares over Loads. A Go server pays wake-ups
// and timers that a busy one amortises over more calls, so CPU per call
// falls as the rate grows, and a cost taken at a light load and scaled in
// proportion predicts saturation too early.
type FitCPUModel struct {
	FixedCores float64 `json:"fixed_cores"`
	PerCallUS  float64 `json:"per_call_us"`
	// MinRate and MaxRate are the range of rates it was measured over.
	MinRate float64   `json:"min_rate"`
	MaxRate float64   `json:"max_rate"`
	Loads   []FitLoad `json:"loads"`
	// Proportional: the loads did not give a line (one load, too narrow a
	// range, or CPU that did not grow with the rate): the cost per call
	// at the highest load is taken as proportional to the rate.
	Proportional bool `json:"proportional,omitempty"`
	// Saturation is the highest rate a load that saturated the server's
	// CPU achieved, with the CPUs it had: where the model's CPU reaches
	// those cores, measured rather than extrapolated. Nil when no load
	// saturated the CPU.
	Saturation *FitSaturation `json:"saturation,omitempty"`
}

// FitSaturation is a measured saturation of the server's CPU.
type FitSaturation struct {
	Rate  float64 `json:"calls_per_s"`
	Cores float64 `json:"cores"`
}

// FitLoad is one load the costs were measured at.
type FitLoad struct {
	// Rate is the calls/s achieved (the whole mix); Cores the server's
	// CPU then (cores busy), with same_host the callers' added.
	Rate  float64 `json:"calls_per_s"`
	Cores float64 `json:"cores"`
	// ServerUtilisation is the server's busy share of its CPUs.
	ServerUtilisation *float64 `json:"server_utilisation,omitempty"`
	// GeneratorShort says why the load generator was short of CPU
	// during this measurement ("" when it was not).
	GeneratorShort string `json:"generator_short,omitempty"`
	// SaturatedCores, when not zero, says that this load fell short of its
	// rate with the server's CPU saturated, and how many CPUs it had: its
	// rate is what they can serve.
	SaturatedCores float64 `json:"saturated_cores,omitempty"`
}

// FitLink is a bandwidth each way.
type FitLink struct {
	Sent     float64 `json:"sent"`
	Received float64 `json:"received"`
}

// FitProbe is one run of fit --verify: the traffic at Scale times its
// rates, and what was achieved.
type FitProbe struct {
	Scale float64 `json:"scale"`
	// Offered and Achieved are calls/s of the whole mix.
	Offered  float64 `json:"offered"`
	Achieved float64 `json:"achieved"`
	// Saturated: some scenario fell more than 2% short of its rate.
	Saturated         bool     `json:"saturated"`
	ServerUtilisation *float64 `json:"server_utilisation,omitempty"`
	// Utilisation is the tier's resources as the probe used them: its
	// calls/s times its cost per call, against the tier.
	Utilisation    map[string]float64 `json:"utilisation,omitempty"`
	LatencyP99US   float64            `json:"latency_p99_us"`
	Errors         int64              `json:"errors"`
	GeneratorBound string             `json:"generator_bound,omitempty"`
	// ServerCPUBreakdown and ClientCPUBreakdown are where the probe's CPU
	// went (fit --verify --profile), as a cell's.
	ServerCPUBreakdown *CPUBreakdown `json:"server_cpu_breakdown,omitempty"`
	ClientCPUBreakdown *CPUBreakdown `json:"client_cpu_breakdown,omitempty"`
}
