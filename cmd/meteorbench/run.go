package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/flagvalue"
	"github.com/meteorbench/meteorbench/internal/job"
	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/loadgen"
	"github.com/meteorbench/meteorbench/internal/output"
	"github.com/meteorbench/meteorbench/internal/ownserver"
	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/server"
)

// runFlags are `run`'s flags as parsed.
type runFlags struct {
	target      flagvalue.HostPort // checked when parsed: a port to dial
	token       string
	protocols   []string
	scenarios   []string
	batches     []int
	concurrency []int
	links       []string
	records     []int
	compress    []string
	jsonCodecs  []string
	engines     []string
	maxWorkers  int
	connections int
	duration    time.Duration
	iterations  int
	warmup      time.Duration
	timeout     time.Duration
	rate        float64
	repeat      int
	formats     []string
	out         string
	report      string
	quiet       bool
	cpuprofile  string
	serverCPUs  int
	segment     string // --segment i/N
	startAt     string // --start-at RFC 3339 or +DURATION
	mix         string // run --mix (mix.go)
	// capacity is set by the capacity command: its probes are open loop.
	capacity bool
	tls      runTLSFlags  // runtls.go
	payload  payloadFlags // payload.go
	// endpoints are the user's own endpoints (run only; endpoints.go).
	endpoints endpointFlags
	// plan is where the result goes, set by config.
	plan *output.Plan
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Load a server over REST and gRPC and report them side by side",
		Long: `Load a meteorbench server with every scenario over every protocol and report
latency, throughput, bytes on the wire, errors and CPU per call side by side.

Without --target, run starts its own server ("meteorbench serve" as a child
process on 127.0.0.1, so client and server have separate runtimes and CPU
accounting) and stops it at the end.

Each cell is one scenario x protocol x batch x concurrency. Protocols are
interleaved cell by cell (and repeat by repeat with --repeat), so drift hits
them alike. A cell first warms up for --warmup (unmeasured, same connections,
same mode), then is measured for --duration or --iterations batches. One
measured operation is a batch of --batch calls made one after another; the
report gives the time per batch and the per-call latency distribution.

Scenarios: small (GetVersion), large (the 1000 records in one message),
stream (the 1000 records streamed: gRPC server stream / NDJSON / delimited
protobuf), post (upload the 1000 records). Protocols: rest (JSON over
HTTP/1.1), grpc, rest-protobuf (protobuf over HTTP/1.1), or all.

--records N[,N...] sets the payload size of large, stream and post (a list
sweeps, small is measured once); the summary then says from which size on
each protocol beats REST. The own server's --max-body is raised to fit the
largest upload; a --target keeps its own limit.

Every response is fully decoded and validated; a wrong answer counts as an
error of class invalid-response. Closed-loop is the default; --rate N makes
the run open-loop (N calls/s per cell, latency measured from each call's
intended start; late = sent more than 1ms after it was due).

A --target that serves only part of the contract (docs/contract.md) is
measured on what it serves; the rest is listed as not served ('meteorbench
check --target' tells beforehand). Your own endpoints instead of the
contract: --rest-url URL against --grpc-addr HOST:PORT --grpc-method
pkg.Service/Method (--schema FILE.proto, or the server's reflection), one
cell pair compared like REST and gRPC.

More load than one machine makes: --segment i/N runs share i of N of the plan
(of the workers, the rate and the iterations; a segment is not part of the
cell keys), --start-at makes the instances start together, and
'meteorbench merge' puts their results back into one.

Results go to stdout (or --out PREFIX.<ext>); progress and warnings go to
stderr. Ctrl-C stops the run and prints what was measured (exit 130).`,
		Example: `  meteorbench run
  meteorbench run --scenario small --proto grpc,rest --concurrency 1,16,64 --format json | jq .
  meteorbench run --target 127.0.0.1:8080 --rate 2000 --duration 30s --out results/run1 --format table,json,csv
  meteorbench run --repeat 5 --scenario large --format markdown`,
		Args: func(cmd *cobra.Command, args []string) error {
			if args = f.tls.takeModeArg(cmd.Flags(), args); len(args) > 0 {
				return usageError{fmt.Errorf("run takes no arguments, got %q", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config(cmd)
			if err != nil {
				return usageError{err}
			}
			cfg.GOGC = tuneGeneratorGC()
			return jobError(job.Run(cmd.Context(), cfg, f.options(cmd)))
		},
	}
	f.addFlags(cmd.Flags())
	f.endpoints.register(cmd.Flags())
	cmd.Flags().StringVar(&f.mix, "mix", "", mixUsage)
	return cmd
}

// addFlags defines run's flags on fl (capacity shares them).
func (f *runFlags) addFlags(fl *pflag.FlagSet) {
	f.target.MinPort = 1
	fl.Var(&f.target, "target", "host:port of a running meteorbench serve (default: start one on 127.0.0.1)")
	fl.StringVar(&f.token, "token", "", "bearer token for a protected server (default $"+server.TokenEnv+")")
	fl.StringSliceVar(&f.protocols, "proto", []string{"all"}, "protocols: rest, rest-protobuf, grpc, or all")
	fl.StringSliceVar(&f.scenarios, "scenario", []string{"all"}, "scenarios: small, large, stream, post, or all")
	fl.IntSliceVar(&f.batches, "batch", []int{100}, "calls per measured batch; a list sweeps (the original experiment: 100,200)")
	fl.IntSliceVar(&f.concurrency, "concurrency", []int{1}, "workers running batches in parallel; a list sweeps (e.g. 1,16,64)")
	fl.StringSliceVar(&f.links, "link", []string{"none"}, "emulated network link to the target, BANDWIDTH/RTT (kbit|mbit|gbit / us|ms|s, e.g. 100mbit/20ms), a preset (lan = 1gbit/0.5ms, vps = 100mbit/20ms, wan = 20mbit/80ms, mobile = 10mbit/50ms) or none; a list sweeps")
	fl.IntSliceVar(&f.records, "records", []int{api.DefaultRecords}, fmt.Sprintf("payload size of large, stream and post, 1..%d records; a list sweeps (e.g. 1,10,100,1000,10000); small is measured once", api.MaxRecords))
	fl.StringSliceVar(&f.compress, "compress", []string{loadgen.CompressNone}, "compression both ways: none, gzip; a list sweeps (gRPC per-message gzip, REST Content-Encoding gzip)")
	fl.StringSliceVar(&f.jsonCodecs, "json-codec", []string{"std"}, "JSON library of the rest (JSON) calls, client and server alike: "+strings.Join(loadgen.JSONCodecs(), ", ")+" (encoding/json, encoding/json/v2, sonic); a list sweeps; rest-protobuf and grpc are measured once")
	fl.StringSliceVar(&f.engines, "engine", []string{"standard"}, "load generator engine: standard (net/http and grpc-go, every answer decoded, as your own Go clients) or lean (pre-built requests, answers decoded on a sample: the generator's CPU per call near wrk's and h2load's); a list sweeps")
	fl.IntVar(&f.connections, "connections", 0, "TCP connections per protocol (0: gRPC 1, REST one per worker)")
	fl.DurationVar(&f.duration, "duration", loadgen.DefaultDuration, "measured time per window of a cell (see --repeat; exclusive with --iterations)")
	fl.IntVar(&f.iterations, "iterations", 0, "batches per cell instead of --duration (each cell is still capped at 10m)")
	fl.DurationVar(&f.warmup, "warmup", loadgen.DefaultWarmup, "unmeasured time before each window, over its fresh connections (0: none)")
	fl.DurationVar(&f.timeout, "timeout", loadgen.DefaultTimeout, "per-call timeout")
	fl.Float64Var(&f.rate, "rate", 0, "open-loop: calls/s per cell shared by all workers (0: closed-loop)")
	fl.IntVar(&f.maxWorkers, "max-workers", 0, "with --rate and no --concurrency, the workers grow as calls would otherwise start late, up to this many (default: enough for 10 s of latency at the rate); each cell records workers_used")
	fl.IntVar(&f.repeat, "repeat", loadgen.DefaultRepeat, "measure every cell as K windows, interleaved with the other protocols'; report medians with confidence intervals and test every ratio (default 1 with --iterations, which counts the batches exactly)")
	fl.StringSliceVar(&f.formats, "format", []string{"table"}, "output formats: "+strings.Join(report.Formats, ", ")+" (several: one after another, or one file each with --out)")
	fl.StringVar(&f.out, "out", "", "write one file per format to PREFIX.<ext> instead of stdout")
	fl.StringVar(&f.report, "report", "", "also write a report to FILE at the end, its format from the extension (.html: one self-contained page with charts; .svg, .png, .md)")
	fl.IntVar(&f.serverCPUs, "server-cpus", ownserver.Auto, "pin the own server to N CPUs (its GOMAXPROCS follows) and the load generator to the others, so they stop competing for cores (Linux). Default: half the CPUs with the own server in closed loop; 0: no pinning")
	fl.StringVar(&f.segment, "segment", "", "run only share i of N of the plan (i/N, e.g. 2/3; auto/N takes i from a Kubernetes Indexed Job's $JOB_COMPLETION_INDEX + 1): 1/N of the rate, of the workers and of the iterations, so N instances together make the whole load; merge their results with 'meteorbench merge'")
	fl.StringVar(&f.startAt, "start-at", "", "start the first cell at this time, RFC 3339 (2026-05-01T12:00:00Z) or relative (+10s), so instances on several machines start together; the actual offset is recorded")
	f.tls.register(fl)
	f.payload.register(fl)
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress bar, no warnings or notes on stderr (only errors)")
	fl.StringVar(&f.cpuprofile, "cpuprofile", "", "write the load generator's CPU profile to this file (for tuning the harness)")
	fl.MarkHidden("cpuprofile")
}

// config turns the flags into the load generator's config, checked by
// its Validate. It does no work: a bad flag fails here with one line.
func (f *runFlags) config(cmd *cobra.Command) (loadgen.Config, error) {
	fl := cmd.Flags()
	var cfg loadgen.Config
	target, err := f.endpoints.target(fl, f.target.Addr) // endpoints.go
	if err != nil {
		return cfg, err
	}
	f.target.Addr = target
	var links []link.Spec
	for _, text := range f.links {
		l, err := link.Parse(text)
		if err != nil {
			return cfg, fmt.Errorf("--%w", err)
		}
		links = append(links, l)
	}
	if !fl.Changed("repeat") && f.iterations > 0 {
		f.repeat = 1 // --iterations asks for a count of batches, not five times it
	}
	// What the config reads as "the default" (an empty list, a zero) is
	// no value a flag may give.
	switch {
	case len(f.protocols) == 0:
		return cfg, errors.New("--proto: no value")
	case len(f.scenarios) == 0:
		return cfg, errors.New("--scenario: no value")
	case len(links) == 0:
		return cfg, errors.New("--link: no value")
	case len(f.records) == 0:
		return cfg, errors.New("--records: no value")
	case len(f.batches) == 0:
		return cfg, errors.New("--batch: no value")
	case len(f.concurrency) == 0:
		return cfg, errors.New("--concurrency: no value")
	case fl.Changed("duration") && fl.Changed("iterations"):
		return cfg, errors.New("--duration and --iterations are exclusive: give one")
	case f.duration <= 0:
		return cfg, fmt.Errorf("--duration %v: must be positive", f.duration)
	case fl.Changed("iterations") && f.iterations < 1:
		return cfg, fmt.Errorf("--iterations %d: must be at least 1", f.iterations)
	case f.warmup < 0:
		return cfg, fmt.Errorf("--warmup %v: must not be negative", f.warmup)
	case f.timeout <= 0:
		return cfg, fmt.Errorf("--timeout %v: must be positive", f.timeout)
	case f.repeat < 1:
		return cfg, fmt.Errorf("--repeat %d: must be at least 1", f.repeat)
	}
	if f.plan, err = report.RunOutput(cmd.OutOrStdout(), f.formats, f.out, f.report); err != nil {
		return cfg, err
	}
	segment, err := loadgen.ParseSegment(f.segment)
	if err != nil {
		return cfg, fmt.Errorf("--%w", err)
	}
	startAt, err := loadgen.ParseStartAt(f.startAt, time.Now())
	if err != nil {
		return cfg, fmt.Errorf("--%w", err)
	}
	if f.capacity && (f.segment != "" || f.startAt != "") {
		return cfg, errors.New("--segment and --start-at split a run between load generators: a capacity search cannot be split")
	}
	if !fl.Changed("token") {
		f.token = os.Getenv(server.TokenEnv)
	}
	cfg = loadgen.Config{
		Target:      f.target.Addr,
		Token:       f.token,
		Protocols:   flagvalue.ExpandAll(f.protocols, api.Protocols()),
		Scenarios:   flagvalue.ExpandAll(f.scenarios, api.Scenarios()),
		Batches:     f.batches,
		Concurrency: f.concurrency,
		Links:       links,
		Compress:    f.compress,
		JSONCodecs:  f.jsonCodecs,
		Engines:     f.engines,
		Connections: f.connections,
		Timeout:     f.timeout,
		Rate:        f.rate,
		MaxWorkers:  loadgen.MaxWorkersFor(f.rate, fl.Changed("concurrency"), f.maxWorkers),
		Repeat:      f.repeat,
		CommandLine: flagvalue.CommandLine(cmd.Name(), cmd.Flags(), "token"),
		OwnServer:   f.target.Addr == "",
		Segment:     segment,
		StartAt:     startAt,
	}
	if err := ownserver.Pin(&cfg, f.serverCPUs, f.rate > 0 || f.capacity || f.mix != ""); err != nil {
		return cfg, err
	}
	if fl.Changed("records") {
		// Only a size asked for is named on the wire and in the cells'
		// keys: the default run stays the original experiment's.
		cfg.Records = f.records
	}
	if cfg.Payload, err = f.payload.load(fl, cmd.ErrOrStderr()); err != nil {
		return cfg, err
	}
	if fl.Changed("iterations") {
		cfg.Iterations = f.iterations
	} else {
		cfg.Duration = f.duration
	}
	cfg.Warmup = f.warmup
	if f.warmup == 0 {
		cfg.Warmup = -1 // none
	}
	if err := f.tls.apply(&cfg, f.target.Addr); err != nil {
		return cfg, err
	}
	if err := f.endpoints.Apply(cmd.Context(), &cfg); err != nil {
		return cfg, err
	}
	if err := f.applyMix(cmd, &cfg); err != nil {
		return cfg, err
	}
	check := cfg
	if check.Target == "" {
		check.Target = "127.0.0.1:0" // the own server's address replaces it
	}
	if err := check.Validate(); err != nil {
		return cfg, fmt.Errorf("--%w", err)
	}
	return cfg, nil
}

// options are how the job reports: where the result goes (f.plan),
// progress on stderr.
func (f *runFlags) options(cmd *cobra.Command) job.Options {
	return job.Options{Output: f.plan, Stderr: cmd.ErrOrStderr(), Quiet: f.quiet, CPUProfile: f.cpuprofile}
}

// jobError gives a job's error its exit status: 130 when interrupted.
func jobError(err error) error {
	if ie, ok := err.(*job.InterruptedError); ok {
		return &exitError{130, ie}
	}
	return err
}
