// Package results defines what a run produces: the stable, documented
// "meteorbench/v1" JSON document that reporters render, `compare` diffs and
// `report` draws. The load generator fills it; nothing downstream ever sees a
// raw sample.
package results

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/link"
)

// Schema names this document's format. A change that breaks readers bumps it.
const Schema = "meteorbench/v1"

// Load modes.
const (
	ModeClosed = "closed-loop" // each worker starts its next call when the last one ends
	ModeOpen   = "open-loop"   // calls start at fixed intended times (--rate)
)

// Result is one run of `meteorbench run`.
type Result struct {
	Schema   string    `json:"schema"`
	Env      Env       `json:"env"`
	Settings Settings  `json:"settings"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Stop says why the run ended: completed, interrupted (Ctrl-C), or
	// failed with its error (for instance the server went away mid-run).
	Stop        Stop     `json:"stop_reason"`
	Interrupted bool     `json:"interrupted"`
	Warnings    []string `json:"warnings,omitempty"`
	// NotServed are the scenarios and protocols of the plan the target did
	// not answer correctly before the first cell: not measured, no cells.
	NotServed []NotServed `json:"not_served,omitempty"`
	// Verdicts answer the run's question per scenario and condition, computed
	// from Cells by package analysis: what the table's summary lines say.
	Verdicts []Verdict `json:"verdicts"`
	// Crossovers say, for each scenario and condition measured at several
	// payload sizes (Settings.Records), from which size on a protocol beats
	// the baseline; computed by package analysis with the verdicts.
	Crossovers []Crossover `json:"crossovers,omitempty"`
	Cells      []Cell      `json:"cells"`
	// Capacity holds what `meteorbench capacity` found, one entry per
	// scenario, protocol and condition; absent from `run` documents.
	Capacity []Capacity `json:"capacity,omitempty"`
	// FitPlan and Fit hold what `meteorbench fit` found, one Fit per
	// protocol; absent from other documents.
	FitPlan *FitPlan `json:"fit_plan,omitempty"`
	Fit     []Fit    `json:"fit,omitempty"`
	// Merged is set on a document `meteorbench merge` made: the inputs
	// and which segments they were.
	Merged *Merged `json:"merged,omitempty"`
	// ProfilingCost is what run --profile cost, measured in the run; nil
	// without --profile.
	ProfilingCost *ProfilingCost `json:"profiling_cost,omitempty"`
}

// Env describes where and with what the run was made.
type Env struct {
	MeteorbenchVersion string `json:"meteorbench_version"`
	GoVersion          string `json:"go_version"`
	GoExperiment       string `json:"goexperiment"` // "" when none; encoding/json depends on it
	GRPCVersion        string `json:"grpc_version"`
	ProtobufVersion    string `json:"protobuf_version"`
	// JSONCodecs are the versions of the JSON libraries of --json-codec
	// other than std (whose version is GoVersion's): "sonic": "v1.15.5".
	JSONCodecs map[string]string `json:"json_codecs,omitempty"`
	GOMAXPROCS int               `json:"gomaxprocs"`
	NumCPU     int               `json:"num_cpu"`
	CPUModel   string            `json:"cpu_model"`
	OS         string            `json:"os"`   // GOOS plus kernel release where known
	Arch       string            `json:"arch"` // GOARCH
	// Target is --target as given: "HOST:PORT", or
	// "rest=HOST:PORT,grpc=HOST:PORT" when each protocol had its own
	// address, which Targets then gives by protocol.
	Target  string            `json:"target"`
	Targets map[string]string `json:"targets,omitempty"`
	// ServerPID is --server-pid as given, when server CPU was read from
	// /proc.
	ServerPID string `json:"server_pid,omitempty"`
	// OwnServer is true when run started its own `serve` child on loopback.
	OwnServer bool     `json:"own_server"`
	Flags     []string `json:"flags"` // the command line as given
	// ServerCPUs and ClientCPUs are the CPU lists the own server and the
	// load generator were pinned to (run --server-cpus); "" when unpinned.
	ServerCPUs string `json:"server_cpus,omitempty"`
	ClientCPUs string `json:"client_cpus,omitempty"`
	// GOGC is the load generator's garbage-collection target (run and
	// capacity set loadgen/plan.GeneratorGOGC, 400, unless $GOGC is set);
	// 0 when not recorded, -1 for off.
	GOGC int `json:"gogc,omitempty"`
	// Scheduling is how precisely this machine let the load generator start
	// a call on time, measured before the run (open loop only).
	Scheduling *Scheduling `json:"scheduling,omitempty"`
	// StartOffsetUS is how late, in microseconds, the first cell started
	// after Settings.StartAt (negative: early); nil without --start-at.
	StartOffsetUS *float64 `json:"start_offset_us,omitempty"`
	// LinkEmulator is what carried the cells' --link: LinkPacket or
	// LinkRelay; "" without a link. LinkFidelity is what the packet link
	// delivered of each link, measured through it before the run
	// (link.Check, without its TCP flow).
	LinkEmulator string             `json:"link_emulator,omitempty"`
	LinkFidelity []link.CheckResult `json:"link_fidelity,omitempty"`
}

// The link emulators (Env.LinkEmulator).
const (
	// LinkPacket: the kernel's TCP and QUIC over TUN devices between two
	// network namespaces, through a forwarder that loses, queues and
	// delays packets (link.Packet).
	LinkPacket = "packet"
	// LinkRelay: a TCP relay that paces and delays bytes, losing none
	// (link.Relay).
	LinkRelay = "relay"
)

// Scheduling is the measured lateness of the open-loop wait: how long after
// a due time a call could actually start, with no load running.
type Scheduling struct {
	Method        string  `json:"method"`  // how the harness waits, e.g. "sleep to 200µs before, then spin"
	Samples       int     `json:"samples"` // wake-ups measured
	LatenessP50US float64 `json:"lateness_p50_us"`
	LatenessP99US float64 `json:"lateness_p99_us"`
}

// Settings are the run's requested parameters; cells say what was achieved.
type Settings struct {
	Protocols   []api.Protocol `json:"protocols"`
	Scenarios   []api.Scenario `json:"scenarios"`
	Batches     []int          `json:"batches"`
	Concurrency []int          `json:"concurrency"`
	// Connections per protocol; 0 means the default (gRPC 1, REST one per
	// worker), or a sweep: ConnectionsSweep.
	Connections      int     `json:"connections"`
	ConnectionsSweep []int   `json:"connections_sweep,omitempty"`
	DurationS        float64 `json:"duration_s,omitempty"` // per cell, when bounded by time
	Iterations       int     `json:"iterations,omitempty"` // batches per cell, when bounded by count
	WarmupS          float64 `json:"warmup_s"`
	TimeoutS         float64 `json:"timeout_s"`
	Mode             string  `json:"mode"`           // ModeClosed or ModeOpen
	Rate             float64 `json:"rate,omitempty"` // calls/s per cell in open-loop mode
	Repeat           int     `json:"repeat"`         // measurements of every cell
	// Proxies are the reverse proxies swept (run --proxy: "none",
	// "nginx", "caddy", "haproxy"); omitted when only none.
	Proxies []string `json:"proxies,omitempty"`
	// Links are the emulated links swept, canonical ("none", "100mbit/20ms");
	// omitted when the run emulated none.
	Links []string `json:"links,omitempty"`
	// Records are the payload sizes swept (--records); empty when none was
	// named (every call then carries api.DefaultRecords). The small
	// scenario has no payload and is measured once.
	Records []int `json:"records,omitempty"`
	// Messages and FeedRates are the stream scenarios' sweeps (--messages,
	// --feed-rate); empty when none was named.
	Messages  []int     `json:"messages,omitempty"`
	FeedRates []float64 `json:"feed_rates,omitempty"`
	// Compress lists the compressions swept ("none", "gzip"); omitted when
	// only none.
	Compress []string `json:"compress,omitempty"`
	// JSONCodecs lists the JSON codecs swept (--json-codec: "std", "v2",
	// "sonic"); omitted when only std was.
	JSONCodecs []string `json:"json_codecs,omitempty"`
	// Mix is the traffic mix of run --mix ("small=800,large=20"); omitted
	// without one.
	Mix string `json:"mix,omitempty"`
	// Engines lists the load generator's engines swept (--engine:
	// "standard", "lean"); omitted when only standard was.
	Engines []string `json:"engines,omitempty"`
	// Sweeps lists, by Field, the values swept of each dimension declared
	// by its Dimensions entry alone (Dimension.Values); omitted for one
	// that ran at its Default only.
	Sweeps map[string][]string `json:"sweeps,omitempty"`
	// Segment is this instance's share of the plan (run --segment i/N);
	// nil when it ran the whole plan. Concurrency, Rate and Iterations
	// above are the whole plan's; each cell's Share is what this instance
	// ran of it.
	Segment *Segment `json:"segment,omitempty"`
	// StartAt is when the first cell was to start (run --start-at), so
	// that the instances of a segmented run start together; nil when the
	// run started at once.
	StartAt *time.Time `json:"start_at,omitempty"`
}

// Cell is one measured combination of the features that vary (CellKey).
// With Repeat > 1 its figures are medians over the repeats, CI holds their
// confidence intervals and Repeats the per-repeat figures; Calls, Errors and
// ErrorClasses are totals.
//
// Per-call figures (latency, bytes, CPU, decode time) are per successful
// call; a cell without one has none of them (see Cell.Figure).
type Cell struct {
	CellKey
	Connections int `json:"connections"` // TCP connections actually opened
	// WorkersUsed is how many workers an open loop that sizes itself
	// (run --rate without --concurrency) grew to; 0 when the workers were
	// fixed (the concurrency).
	WorkersUsed int    `json:"workers_used,omitempty"`
	Mode        string `json:"mode"`

	Calls  int64 `json:"calls"`  // successful calls
	Errors int64 `json:"errors"` // failed calls (attempts = calls + errors)
	// ErrorClasses counts failed calls by class; ErrorExamples keeps the
	// first message seen of each class.
	ErrorClasses  ErrorCounts           `json:"error_classes,omitempty"`
	ErrorExamples map[ErrorClass]string `json:"error_examples,omitempty"`
	// StopReason is why the measurement ended: "" when it ran to its bound,
	// else one of the Stop* reasons.
	StopReason StopReason `json:"stop_reason,omitempty"`
	DurationS  float64    `json:"duration_s"` // measured time (warm-up excluded)
	CallsPerS  float64    `json:"calls_per_s"`
	MBPerS     float64    `json:"mb_per_s"` // bytes sent plus received, 10^6 per second

	// Open-loop only: achieved rate (attempts per second), calls that
	// started late. The requested rate is CellKey.RateRequested.
	RateAchieved float64 `json:"rate_achieved,omitempty"`
	LateCalls    int64   `json:"late_calls,omitempty"`
	// GeneratorLateCalls are the late calls a worker was free for in time:
	// the load generator woke late (its own CPU or timers), as opposed to
	// calls queued behind busy workers (a slow server).
	GeneratorLateCalls int64 `json:"generator_late_calls,omitempty"`

	// LatencyUS is per successful call. In open-loop mode it is measured from
	// the intended start (corrected for coordinated omission) and
	// LatencyUncorrectedUS from the actual send.
	LatencyUS            Latency  `json:"latency_us"`
	LatencyUncorrectedUS *Latency `json:"latency_uncorrected_us,omitempty"`
	// Distribution is the latency percentile curve, for plotting.
	Distribution []Quantile `json:"distribution,omitempty"`
	// FirstRecordUS is the time to the first record, for the stream scenario.
	FirstRecordUS *Latency `json:"first_record_us,omitempty"`
	// LastByteUS is the time from the send to the whole response received,
	// before the client decodes it; DecodeUS is the client's decode time
	// (for streams: the sum over the call's messages). Both per successful
	// call, nil when the protocol adapter does not report them.
	LastByteUS *Latency `json:"last_byte_us,omitempty"`
	DecodeUS   *Latency `json:"decode_us,omitempty"`
	// ClientDecoding is how the client decoded a user's endpoint's
	// answers (run --grpc-method, --rest-url, --endpoints); empty for the
	// contract's calls, which decode into generated types.
	ClientDecoding Decoding `json:"client_decoding,omitempty"`
	// ClientDecodingWhy is why a generic decoding was taken ("field
	// shop.v1.Legacy.g: groups are not supported", "the answer is not
	// the JSON of a shop.v1.Order: ..."): the verdict names it.
	ClientDecodingWhy string `json:"client_decoding_why,omitempty"`

	// TLSHandshakeUS is the client's TLS handshake time per connection the
	// cell opened (warm-up included, as Connections); TLS cells only.
	TLSHandshakeUS *Latency `json:"tls_handshake_us,omitempty"`
	// StreamSetupUS is the time to open each stream of the stream
	// scenarios (upload, chat, feed), with ending the one before: a
	// cell's LatencyUS is then per message, without it. gRPC opens a
	// stream without a round trip (its headers go with the first
	// message); a WebSocket's upgrade and an upload's POST wait for one.
	StreamSetupUS *Latency `json:"stream_setup_us,omitempty"`

	// Closed loop only: batches completed without error and the time per
	// batch of Batch calls. Open-loop cells have no time per batch.
	Batches int64  `json:"batches"`
	BatchMS Spread `json:"batch_ms"`

	// BytesPerCall is on the wire, counted at the socket, per successful call.
	BytesPerCall Bytes `json:"bytes_per_call"`

	// CPU per successful call, microseconds.
	ClientCPUUSPerCall float64 `json:"client_cpu_us_per_call"`
	// ServerCPUUSPerCall is nil when the server's /metrics could not be read
	// (and no --server-pid was given).
	ServerCPUUSPerCall *float64 `json:"server_cpu_us_per_call"`
	// ServerCPUSource is where ServerCPUUSPerCall came from: "metrics" (the
	// server's /metrics, microseconds) or "proc" (/proc/PID/stat of
	// --server-pid, 10 ms clock ticks); empty when unknown (and in
	// documents from before it was recorded: metrics).
	ServerCPUSource string `json:"server_cpu_source,omitempty"`
	// ServerCPUMetricsUSPerCall is the same server's CPU per call from its
	// /metrics in a cell whose figure came from /proc (both were read over
	// the same window): the one checks the other.
	ServerCPUMetricsUSPerCall *float64 `json:"server_cpu_metrics_us_per_call,omitempty"`
	// BackendCPUUSPerCall and ProxyCPUUSPerCall split ServerCPUUSPerCall
	// in a cell measured behind a proxy (Condition.Proxy): the server's
	// own CPU and the proxy's, every process of it (/proc, 10 ms clock
	// ticks). ServerCPUUSPerCall is their sum, the CPU the machine pays
	// per call. Omitted without a proxy, and when either is unknown (then
	// ServerCPUUSPerCall is too).
	BackendCPUUSPerCall *float64 `json:"backend_cpu_us_per_call,omitempty"`
	ProxyCPUUSPerCall   *float64 `json:"proxy_cpu_us_per_call,omitempty"`
	// Target is the address the cell's calls went to, when the run gave
	// each protocol its own (--target rest=...,grpc=...).
	Target string `json:"target,omitempty"`
	// GeneratorBottleneck says the load generator's own CPU may have
	// limited the cell, and GeneratorBottleneckReason why: it used most of
	// its cores, or it shares the machine's cores with the server, they
	// were saturated, and it used more of them than the server. A figure of
	// such a cell says more of the load generator than of the server.
	// (Documents before the reason had its own field wrote the reason as
	// generator_bottleneck; they read as true with that reason, see
	// Cell.UnmarshalJSON.)
	GeneratorBottleneck       bool   `json:"generator_bottleneck,omitempty"`
	GeneratorBottleneckReason string `json:"generator_bottleneck_reason,omitempty"`
	// GeneratorDelayUS is the load generator's own delays while the cell
	// ran; nil in documents from before it was measured.
	GeneratorDelayUS *GeneratorDelay `json:"generator_delay_us,omitempty"`
	// ServerUtilisation is the server's CPU time over the cell's time, as a
	// fraction of the CPUs it had (its pinned CPUs, else the machine's):
	// the load its CPU per call was measured at. Nil when unknown.
	ServerUtilisation *float64 `json:"server_utilisation,omitempty"`
	// ServerMemory is the server's memory read at the cell's end; nil when
	// unknown. With repeats, the largest of each figure.
	ServerMemory *ServerMemory `json:"server_memory,omitempty"`
	// ServerCPUBreakdown and ClientCPUBreakdown are where the server's and
	// the load generator's CPU went (run --profile); nil without it.
	ServerCPUBreakdown *CPUBreakdown `json:"server_cpu_breakdown,omitempty"`
	ClientCPUBreakdown *CPUBreakdown `json:"client_cpu_breakdown,omitempty"`

	// Mix is each scenario's rates and latency in a mixed-traffic cell
	// (Scenario MixScenario, run --mix); the cell's own figures are those
	// of all its calls together.
	Mix []MixStat `json:"mix,omitempty"`

	// Repeat > 1 only.
	CI      map[Figure]Interval `json:"ci,omitempty"`
	Repeats []Sample            `json:"repeats,omitempty"`

	Warnings []string `json:"warnings,omitempty"`
	// Suspect lists why the cell's figures contradict each other or were
	// distorted by the load generator or a stalled target (Little's law,
	// abandoned calls, a rate not delivered, bytes short of the records
	// asked for, the generator's own delays). A suspect cell keeps its
	// figures but gets no verdict, and the run exits non-zero.
	Suspect []string `json:"suspect,omitempty"`

	// Share is what this instance ran of the cell in a segmented run
	// (Settings.Segment); nil otherwise, and in merged documents.
	Share *Share `json:"share,omitempty"`
	// Histograms are the cell's latency histograms, lossless, for merging
	// the cells of several load generators exactly.
	Histograms *Histograms `json:"histograms,omitempty"`
}

// Unusable lists the cells a run must not end well with, as "key: why":
// those without a successful call (a segment's empty share of a cell
// aside: the other segments measure it) and the suspect ones.
func (r *Result) Unusable() []string {
	var out []string
	for i := range r.Cells {
		c := &r.Cells[i]
		switch {
		case c.Share != nil && c.Share.Empty:
		case c.Calls == 0:
			out = append(out, c.Key()+": no successful call")
		case len(c.Suspect) > 0:
			out = append(out, c.Key()+": suspect: "+c.Suspect[0])
		}
	}
	return out
}

// ServerMemory is a server's memory in MiB (2^20 bytes): its resident set
// and Go heap in use when read, and its peak resident set since it started
// (0 when the server does not say).
type ServerMemory struct {
	RSSMiB     float64 `json:"rss_mib"`
	PeakRSSMiB float64 `json:"peak_rss_mib,omitempty"`
	HeapMiB    float64 `json:"heap_mib"`
}

// GeneratorDelay is how long the load generator itself held calls up, in
// microseconds. Wake: how late a goroutine woken by the netpoller ran (a
// canary timer read every 5 ms, as an answer is read from its socket), so
// an answer that had arrived waited about that long for its reader. Handoff
// (open loop): from the dispatcher's wake-up for a due call to the call's
// send by a worker.
type GeneratorDelay struct {
	Wake    Latency  `json:"wake"`
	Handoff *Latency `json:"handoff,omitempty"`
}

// Latency holds percentiles in microseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Quantile is one point of a latency distribution: the fraction of calls
// (0..1) at or below US microseconds.
type Quantile struct {
	Q  float64 `json:"q"`
	US float64 `json:"us"`
}

// Spread is a mean with its standard deviation.
type Spread struct {
	Mean   float64 `json:"mean"`
	Stddev float64 `json:"stddev"`
}

// Bytes are bytes on the wire per call, both directions, including protocol
// framing (HTTP headers, HTTP/2 frames, connection set-up amortised).
type Bytes struct {
	Sent     float64 `json:"sent"`
	Received float64 `json:"received"`
}

// Interval is a median with its confidence interval over repeats.
type Interval struct {
	Median     float64 `json:"median"`
	Lo         float64 `json:"lo"`
	Hi         float64 `json:"hi"`
	Confidence float64 `json:"confidence"` // e.g. 0.95
	N          int     `json:"n"`
}

// Sample is the figures of one repeat of a cell.
type Sample map[Figure]float64

// Write encodes r as indented JSON.
func Write(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteLine encodes r as one line of JSON and a newline (JSON Lines), so
// that the documents of several load generators can travel in one stream,
// such as their orchestrator's logs, and be told apart by line
// (ReadDocuments).
func WriteLine(w io.Writer, r *Result) error {
	return json.NewEncoder(w).Encode(r)
}

// Read decodes a result document and checks its schema.
func Read(rd io.Reader) (*Result, error) {
	var r Result
	dec := json.NewDecoder(rd)
	if err := dec.Decode(&r); err != nil {
		return nil, &NotResultError{fmt.Errorf("decode: %w", err)}
	}
	if r.Schema != Schema {
		return nil, &NotResultError{fmt.Errorf("schema %q, want %q", r.Schema, Schema)}
	}
	return &r, nil
}

// ReadFile reads a result document from a file.
func ReadFile(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// At reads a percentile of l: 50, 90, 99.9, or 99 for any other value (the
// objectives `capacity --slo` takes).
func (l Latency) At(p float64) float64 { return *l.field(p) }

// SetAt sets the percentile At reads.
func (l *Latency) SetAt(p, v float64) { *l.field(p) = v }

func (l *Latency) field(p float64) *float64 {
	switch p {
	case 50:
		return &l.P50
	case 90:
		return &l.P90
	case 99.9:
		return &l.P999
	}
	return &l.P99
}
