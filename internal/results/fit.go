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

	// With --verify: the traffic's scale at saturation, predicted
	// (MaxScale) and measured, the prediction's error against the
	// measurement ((predicted-measured)/measured), and the probes.
	PredictedMax    *float64   `json:"predicted_max,omitempty"`
	MeasuredMax     *float64   `json:"measured_max,omitempty"`
	PredictionError *float64   `json:"prediction_error,omitempty"`
	GeneratorBound  string     `json:"generator_bound,omitempty"`
	Probes          []FitProbe `json:"probes,omitempty"`
	// Verdict is this protocol's sentence.
	Verdict string `json:"verdict"`
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
}
