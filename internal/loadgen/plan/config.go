// Package plan is what the load generator measures, before anything is
// measured: a Config (scenarios, protocols, batches, the values of every
// dimension of a condition, the bounds of a cell), its validation, the
// Settings it is recorded as, the engine registry (which client a cell is
// called with), and the plan:
//
//	Config ──Specs()──▶ []Spec (scenario × batch × every condition of
//	                   planTable (dimensions.go: rate, server CPUs, link,
//	                   concurrency, records, compression, TLS, JSON codec,
//	                   endpoint, payload, traffic, engine, and those declared
//	                   in results.Dimensions alone) × repeat × protocol,
//	                   protocols interleaved cell by cell)
//
// A Spec is a results.CellKey (and which repeat): package session
// measures it, package engine runs its calls.
package plan

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/loadgen/endpointcall"
	"github.com/meteorbench/meteorbench/internal/loadgen/lean"
	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/target"
)

// Defaults of the zero Config, and run's: every cell measured as
// DefaultRepeat interleaved windows of DefaultDuration, each after
// DefaultWarmup over its own fresh connections, so that every default
// ratio has an interval and a test (four default runs with one 3 s window
// each called REST+protobuf against REST 1.04x slower, 1.29x faster, 1.13x
// faster and 1.07x slower). Five windows of 600 ms after 200 ms each take
// about as long per cell as the earlier defaults did (one 3 s window after
// 1 s of warm-up).
const (
	DefaultDuration = 600 * time.Millisecond // measured time per window
	DefaultWarmup   = 200 * time.Millisecond // unmeasured time before each window
	DefaultRepeat   = 5                      // run's windows per cell (the zero Config: 1)
	DefaultTimeout  = 10 * time.Second       // per call
	// DefaultCellLimit bounds a cell measured by Iterations alone.
	DefaultCellLimit = 10 * time.Minute
)

// GeneratorGOGC is the load generator's garbage-collection target (GOGC):
// run and capacity set it unless the environment sets one. With Go's
// default of 100 its own collections distorted what it measured: small
// REST at 13,400 calls/s over 1024 workers against a warm server, 5 s
// after a 1 s warm-up, gave p99 128-512 ms from the intended start in
// four fresh runs, nearly all of it calls started late by the generator,
// and a longer warm-up did not help (10 s: 178 ms). With GOGC 400 the same run gave p99 15 ms, as did
// GOGC off (16 ms): the collector, run every few milliseconds over a small
// heap, took the cores the dispatcher needed. The cost is memory: the
// generator's heap may grow to five times its live data (tens of MB).
const GeneratorGOGC = 400

// Progress is reported before each cell measurement and once at the end.
type Progress struct {
	Done  int    // cell measurements finished
	Total int    // cell measurements planned
	Cell  string // the cell about to be measured ("" at the end)
}

// Config is one run. Its zero value (plus Target) is the default run: all
// scenarios over all three protocols, batches of 100, one worker,
// closed-loop, DefaultWarmup (200 ms) then DefaultDuration (600 ms)
// measured per cell, once (Repeat 1; run's own default is DefaultRepeat).
type Config struct {
	// Target is where each protocol's calls go: one host:port serving
	// every protocol (target.One), or one per protocol (the REST and gRPC
	// servers on ports of their own). Required. Each protocol's calls,
	// health check and /metrics go to its own address, over its own
	// protocol (targets.go).
	Target target.Targets
	// ServerPID, when set, are the server processes whose CPU per call is
	// read from /proc/PID/stat (procstat.go), for servers without
	// meteorbench's /metrics: any process on this machine.
	ServerPID target.PIDs
	// Token, when set, is sent as a bearer token on every data call.
	Token string

	// Protocols to compare, in the order measured within each cell group.
	// Default: all three (api.Protocols).
	Protocols []api.Protocol
	// Scenarios. Default: all four (api.Scenarios).
	Scenarios []api.Scenario
	// Batches are the calls per measured operation. Default: 100 (the
	// original experiment used 100 and 200).
	Batches []int
	// Concurrency is the number of workers; a list sweeps. Default: 1.
	Concurrency []int
	// Connections are the TCP (or QUIC) connections per protocol per cell
	// (gRPC: a pool of ClientConns, the calls spread round-robin); a list
	// sweeps. Empty means the protocol's default (gRPC and HTTP/2 1,
	// HTTP/1.1 one per worker).
	Connections []int
	// Links are the emulated network links between the load generator and
	// the target (Packet, else link.Relay); a list sweeps. Default: none
	// (no emulation, straight to the target).
	Links []link.Spec
	// Records are the payload sizes of the large, stream and post
	// scenarios (1..api.MaxRecords); a list sweeps. Empty means none is
	// named: the calls are the original contract's, 1000 records, and the
	// cells' Condition.Records stays 0. The small scenario has no payload
	// and is measured once whatever the list.
	Records []int
	// Messages are the messages per stream of the stream scenarios
	// (upload, chat, feed: 1..api.MaxStreamMessages); a list sweeps.
	// Empty: api.DefaultStreamMessages, the cells' Condition.Messages 0.
	// The other scenarios are measured once whatever the list.
	Messages []int
	// FeedRates are the records a second the feed asks the server to push
	// on each stream (0: as fast as the client reads); a list sweeps.
	// Empty: 0. The other scenarios are measured once whatever the list.
	FeedRates []float64
	// Compress is the compression asked for both ways, CompressNone or
	// CompressGzip; a list sweeps (compress.go). Default: none.
	Compress []string
	// JSONCodecs are the JSON libraries the rest (JSON) calls are encoded
	// and decoded with, on both sides (jsoncodec.go): "std" (encoding/json),
	// "v2", "sonic"; a list sweeps. Other protocols are measured once per
	// other condition. Default: std.
	JSONCodecs []string
	// Payload, when set, is the user's payload the target serves instead
	// of the meteorites (run --payload): the calls carry and check its
	// items, and a target serving another payload is refused (payload.go).
	Payload *payload.Payload
	// Mix, when set, is mixed traffic (mix.go): its scenarios at once, each
	// at its own rate, open loop, one cell per protocol and condition of
	// scenario results.MixScenario. Scenarios and Rate are then the mix's
	// (leave them unset).
	Mix results.Mix
	// Engines are the load generator's engines (engine.go): "standard"
	// (net/http and grpc-go) and "lean" (package lean); a list sweeps.
	// Default: standard.
	Engines []string
	// Sweeps are the values of each dimension declared by its
	// results.Dimensions entry alone (Dimension.Values), by Field, as its
	// flag lists them; a list sweeps. A dimension without any runs at its
	// Default.
	Sweeps map[string][]string

	// Endpoints, when set, are the user's own endpoints the run measures
	// instead of the contract's calls (endpoints.go): one scenario,
	// endpointcall.Scenario, over the protocols the endpoints have. Target
	// is then one of them (for the run's record); each side's metrics are
	// read at its own address when it serves meteorbench's.
	Endpoints *endpointcall.Endpoints

	// Duration is the measured time per cell. Zero means DefaultDuration,
	// unless Iterations is set, in which case the cell is bounded by
	// Iterations and CellLimit. With both set, the first bound reached ends
	// the cell.
	Duration time.Duration
	// Iterations is the number of batches per cell (shared by the workers;
	// in open-loop mode, Iterations × batch calls). Zero means no count bound.
	Iterations int
	// CellLimit bounds a cell's measured time when Duration is unset. Zero
	// means DefaultCellLimit.
	CellLimit time.Duration
	// Warmup is the unmeasured time each cell runs first, over the same
	// connections and in the same mode. Zero means DefaultWarmup; negative
	// means no warm-up.
	Warmup time.Duration
	// Timeout bounds each call. Zero means DefaultTimeout.
	Timeout time.Duration

	// Rate, when > 0, selects open-loop mode: Rate calls per second per
	// cell, shared by all workers, each call scheduled at a fixed intended
	// start. Zero means closed-loop.
	Rate float64
	// MaxWorkers, when > 0 in open loop, makes the workers grow from the
	// concurrency as calls would otherwise start late, up to MaxWorkers
	// (engine/grow.go; DefaultMaxWorkers is run's default); each cell records
	// how many it used (Cell.WorkersUsed). Zero: the workers are fixed.
	MaxWorkers int
	// Repeat is how many times each cell is measured (interleaved with the
	// other protocols). Zero means 1.
	Repeat int

	// TLS lists the transport conditions to measure, a sweep: false is
	// plaintext, true TLS. Empty means plaintext only. TLSConfig is the
	// clients' TLS configuration (roots or InsecureSkipVerify; nil: the
	// system roots); each protocol's client sets its own ALPN (tls.go).
	TLS       []bool
	TLSConfig *tls.Config

	// ServerCPUs is the number of CPUs the own server is pinned to (0: not
	// pinned); it is part of every cell's condition. ServerCPUList and
	// ClientCPUList, the pinned CPU lists, are recorded in results.Env.
	ServerCPUs                   int
	ServerCPUList, ClientCPUList string

	// Proxies are the reverse proxies the own server is measured behind
	// (run --proxy), a sweep: proxy.None for the server itself, or a name
	// of proxy.Names. Empty means none. A cell behind a proxy is over TLS,
	// which ends at the proxy. Behind are the proxies running, by name,
	// once started (the job starts them after the own server).
	Proxies []string
	Behind  map[string]Behind
	// ProxyTemplates are configuration templates of Proxies by name
	// (--proxy-config); a proxy without one runs deploy/proxy's.
	ProxyTemplates map[string]string

	// Segment, when not whole, is this instance's share of the plan: the
	// instance runs its share of every cell's workers, open-loop rate and
	// iterations (segment.go), so that Segment.Count instances started
	// together make the load of one. The zero value is the whole plan.
	Segment results.Segment
	// StartAt, when set, is when the first cell starts: Run waits for it
	// after its health checks (instances of a segmented run share it) and
	// records how late it actually started (results.Env.StartOffsetUS).
	StartAt time.Time

	// Profile records CPU profiles over the cells' measured windows (run
	// --profile): the load generator's own (runtime/pprof) and the
	// server's, from ServerPprof, and puts each cell's CPU in categories
	// (package cpubreakdown). With Repeat > 1 the windows alternate
	// profiled and not, so the run measures what profiling costs.
	// ProfileDir, when set, is where each cell's profiles are saved.
	// ServerPprof is the server's CPU profile URL (net/http/pprof's
	// /debug/pprof/profile), one for every protocol or one per protocol
	// (a protocol without one: its server's side unknown); empty: the
	// target's own /debug/pprof/ if it serves one (meteorbench serve
	// --pprof; the own server does).
	Profile     bool
	ProfileDir  string
	ServerPprof target.PerProtocol[string]

	// CommandLine, OwnServer and GOGC (the load generator's own
	// garbage-collection target, set by the command) are recorded in
	// results.Env.
	CommandLine []string
	OwnServer   bool
	GOGC        int

	// Packet, when set, is the packet link (own server only): the cells
	// with a link reach the server through it, set to the cell's link,
	// instead of through a link.Relay. LinkFidelity is what link.Check
	// measured of each link at the start (results.Env).
	Packet       *link.Packet
	LinkFidelity []link.CheckResult

	// Logger receives warnings (also kept in the results). Nil discards them.
	Logger *slog.Logger
	// NoProbe skips the contract probe before the first cell (session/probe.go):
	// for a target known to fail every call on purpose (fault-injection
	// tests measure how cells classify those failures). The commands never
	// set it.
	NoProbe bool
	// Progress, when set, is called before each cell measurement and at the end.
	Progress func(Progress)
	// Measured, when set, is called once per group of cells that share a
	// scenario, batch and condition (every protocol and every repeat of
	// it), as soon as the group's last measurement is done, in plan order,
	// with the group's merged cells: the same values, in the same order, as
	// they appear in Result.Cells. When the run ends early, it is called
	// once more with what was measured of the unfinished group, so the
	// calls together always give Result.Cells. It runs on Run's goroutine,
	// between measurements; the cells' maps are shared with Result.Cells,
	// so it must not modify them.
	Measured func(cells []results.Cell)
	// Started, when set, is called once before the first cell with the
	// result's header (Env, Settings, Started; no cells yet), e.g. to print
	// it before the sections that Measured hands over.
	Started func(header *results.Result)
}

// WithDefaults fills the zero values.
func (c Config) WithDefaults() Config {
	// The scenarios and protocols not asked for: a mix's scenario, the
	// endpoints' pairs and the protocols they have, those --target gives
	// an address, else the contract's.
	if len(c.Scenarios) == 0 && len(c.Mix) > 0 {
		c.Scenarios = []api.Scenario{results.MixScenario}
	}
	if len(c.Scenarios) == 0 && c.Endpoints != nil {
		c.Scenarios = c.Endpoints.Scenarios()
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = api.Scenarios()
	}
	if len(c.Mix) > 0 && c.Rate == 0 {
		c.Rate = c.Mix.Total()
	}
	if len(c.Protocols) == 0 && c.Endpoints != nil {
		c.Protocols = c.Endpoints.Protocols()
	}
	if len(c.Protocols) == 0 && c.Target.Split() {
		c.Protocols = c.Target.Protocols()
	}
	if len(c.Protocols) == 0 {
		c.Protocols = api.DefaultProtocols()
	}
	if len(c.Batches) == 0 {
		c.Batches = []int{100}
	}
	if len(c.Concurrency) == 0 {
		c.Concurrency = []int{1}
	}
	if len(c.Links) == 0 {
		c.Links = []link.Spec{{}}
	}
	if len(c.Compress) == 0 {
		c.Compress = []string{CompressNone}
	}
	if len(c.JSONCodecs) == 0 {
		c.JSONCodecs = []string{jsoncodec.Std}
	}
	if len(c.Engines) == 0 {
		c.Engines = []string{lean.Standard}
	}
	if c.Duration == 0 && c.Iterations == 0 {
		c.Duration = DefaultDuration
	}
	if c.CellLimit == 0 {
		c.CellLimit = DefaultCellLimit
	}
	switch {
	case c.Warmup == 0:
		c.Warmup = DefaultWarmup
	case c.Warmup < 0:
		c.Warmup = 0
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Repeat == 0 {
		c.Repeat = 1
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
