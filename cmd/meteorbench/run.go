package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/cpuset"
	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/loadgen"
	"github.com/meteorbench/meteorbench/internal/loadgen/child"
	"github.com/meteorbench/meteorbench/internal/output"
	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
)

// runFlags are `run`'s flags as parsed.
type runFlags struct {
	target      string
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
	// capacity is set by the capacity command: its probes are open loop.
	capacity bool
	tls      runTLSFlags // runtls.go
	// plan is where the result goes, set by config.
	plan *output.Plan
	// The CPUs --server-cpus gives each side, set by config.
	serverSet, clientSet cpuset.Set
}

// autoServerCPUs is --server-cpus left to its default (defaultServerCPUs).
const autoServerCPUs = -1

// defaultServerCPUs pins the own server to half the CPUs this process may
// use, the load generator to the other half, in closed loop: measured on a
// 2-core VM, five interleaved runs of small and large over REST and gRPC,
// the gRPC/REST calls/s ratio spread (max/min) 1.10-1.12 pinned against
// 1.27-1.35 unpinned. Not in open loop: its schedule needs the load
// generator to wake on time, and on one CPU shared with other work it did
// not (idle-wait lateness p99 20 ms pinned against 1.2 ms unpinned at load
// average 5; 724 of 900 gRPC calls late at 300/s). No pinning with
// --target, on a single CPU, or where the platform cannot pin.
func defaultServerCPUs(ownServer, openLoop bool) int {
	avail, err := cpuset.Available()
	if !ownServer || openLoop || err != nil || avail.Len() < 2 {
		return 0
	}
	return avail.Len() / 2
}

// childStopGrace is how long the own server may take to drain at the end.
const childStopGrace = 10 * time.Second

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
			return f.run(cmd, cfg)
		},
	}
	f.addFlags(cmd.Flags())
	return cmd
}

// addFlags defines run's flags on fl (capacity shares them).
func (f *runFlags) addFlags(fl *pflag.FlagSet) {
	fl.StringVar(&f.target, "target", "", "host:port of a running meteorbench serve (default: start one on 127.0.0.1)")
	fl.StringVar(&f.token, "token", "", "bearer token for a protected server (default $"+tokenEnv+")")
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
	fl.IntVar(&f.repeat, "repeat", loadgen.DefaultRepeat, "measure every cell as K windows, interleaved with the other protocols'; report medians with confidence intervals and test every ratio (default 1 with --iterations, which counts the batches exactly)")
	fl.StringSliceVar(&f.formats, "format", []string{"table"}, "output formats: "+strings.Join(report.Formats, ", ")+" (several: one after another, or one file each with --out)")
	fl.StringVar(&f.out, "out", "", "write one file per format to PREFIX.<ext> instead of stdout")
	fl.StringVar(&f.report, "report", "", "also write a report to FILE at the end, its format from the extension (.html: one self-contained page with charts; .svg, .png, .md)")
	fl.IntVar(&f.serverCPUs, "server-cpus", autoServerCPUs, "pin the own server to N CPUs (its GOMAXPROCS follows) and the load generator to the others, so they stop competing for cores (Linux). Default: half the CPUs with the own server in closed loop; 0: no pinning")
	fl.StringVar(&f.segment, "segment", "", "run only share i of N of the plan (i/N, e.g. 2/3; auto/N takes i from a Kubernetes Indexed Job's $JOB_COMPLETION_INDEX + 1): 1/N of the rate, of the workers and of the iterations, so N instances together make the whole load; merge their results with 'meteorbench merge'")
	fl.StringVar(&f.startAt, "start-at", "", "start the first cell at this time, RFC 3339 (2026-05-01T12:00:00Z) or relative (+10s), so instances on several machines start together; the actual offset is recorded")
	f.tls.register(fl)
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress bar, no warnings or notes on stderr (only errors)")
	fl.StringVar(&f.cpuprofile, "cpuprofile", "", "write the load generator's CPU profile to this file (for tuning the harness)")
	fl.MarkHidden("cpuprofile")
}

// config validates the flags and builds the load generator's config. It
// does no work: a bad flag fails here with one line.
func (f *runFlags) config(cmd *cobra.Command) (loadgen.Config, error) {
	fl := cmd.Flags()
	var cfg loadgen.Config
	if f.target != "" {
		if _, _, err := net.SplitHostPort(f.target); err != nil {
			return cfg, fmt.Errorf("--target %q: want host:port", f.target)
		}
	}
	protocols, err := expandAll("--proto", f.protocols, api.Protocols())
	if err != nil {
		return cfg, err
	}
	scenarios, err := expandAll("--scenario", f.scenarios, api.Scenarios())
	if err != nil {
		return cfg, err
	}
	for _, b := range f.batches {
		if b < 1 {
			return cfg, fmt.Errorf("--batch %d: must be at least 1", b)
		}
	}
	var links []link.Spec
	for _, text := range f.links {
		l, err := link.Parse(text)
		if err != nil {
			return cfg, fmt.Errorf("--%w", err)
		}
		links = append(links, l)
	}
	if len(links) == 0 {
		return cfg, errors.New("--link: no value")
	}
	for _, c := range f.concurrency {
		if c < 1 {
			return cfg, fmt.Errorf("--concurrency %d: must be at least 1", c)
		}
	}
	seenRecords := map[int]bool{}
	for _, n := range f.records {
		if n < 1 || n > api.MaxRecords {
			return cfg, fmt.Errorf("--records %d: must be in 1..%d", n, api.MaxRecords)
		}
		if seenRecords[n] {
			return cfg, fmt.Errorf("--records %d given twice", n)
		}
		seenRecords[n] = true
	}
	if !fl.Changed("repeat") && f.iterations > 0 {
		f.repeat = 1 // --iterations asks for a count of batches, not five times it
	}
	switch {
	case len(f.records) == 0:
		return cfg, errors.New("--records: no value")
	case len(f.batches) == 0:
		return cfg, errors.New("--batch: no value")
	case len(f.concurrency) == 0:
		return cfg, errors.New("--concurrency: no value")
	case f.connections < 0:
		return cfg, fmt.Errorf("--connections %d: must not be negative", f.connections)
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
	case f.rate < 0 || f.rate != f.rate:
		return cfg, fmt.Errorf("--rate %v: must be a positive number of calls/s (or 0 for closed-loop)", f.rate)
	case f.repeat < 1:
		return cfg, fmt.Errorf("--repeat %d: must be at least 1", f.repeat)
	}
	if err := checkFormats(f.formats); err != nil {
		return cfg, err
	}
	if f.report != "" {
		if _, ok := report.FormatForPath(f.report); !ok {
			return cfg, fmt.Errorf("--report %q: name a file ending in .html, .svg, .png, .md, .csv or .json", f.report)
		}
	}
	f.plan = f.outputPlan(cmd.OutOrStdout())
	if err := f.plan.Check("--out"); err != nil {
		return cfg, err
	}
	segment, startAt, err := parseSegmentFlags(f.segment, f.startAt, time.Now())
	if err != nil {
		return cfg, err
	}
	if f.capacity && (f.segment != "" || f.startAt != "") {
		return cfg, errors.New("--segment and --start-at split a run between load generators: a capacity search cannot be split")
	}
	if f.serverCPUs == autoServerCPUs {
		f.serverCPUs = defaultServerCPUs(f.target == "", f.rate > 0 || f.capacity)
	}
	if f.serverCPUs < 0 {
		return cfg, fmt.Errorf("--server-cpus %d: must not be negative", f.serverCPUs)
	}
	if f.serverCPUs != 0 {
		if f.target != "" {
			return cfg, fmt.Errorf("--server-cpus %d pins run's own server: with --target, start the server with 'meteorbench serve --cpus LIST' on its machine", f.serverCPUs)
		}
		avail, err := cpuset.Available()
		if err != nil {
			return cfg, fmt.Errorf("--server-cpus: %w", err)
		}
		if f.serverSet, f.clientSet, err = cpuset.Split(avail, f.serverCPUs); err != nil {
			return cfg, err
		}
	}
	if !fl.Changed("token") {
		f.token = os.Getenv(tokenEnv)
	}

	cfg = loadgen.Config{
		Target:      f.target,
		Token:       f.token,
		Protocols:   protocols,
		Scenarios:   scenarios,
		Batches:     f.batches,
		Concurrency: f.concurrency,
		Links:       links,
		Compress:    f.compress,
		JSONCodecs:  f.jsonCodecs,
		Engines:     f.engines,
		Connections: f.connections,
		Timeout:     f.timeout,
		Rate:        f.rate,
		Repeat:      f.repeat,
		CommandLine: commandLine(cmd),
		OwnServer:   f.target == "",
		ServerCPUs:  f.serverCPUs,
		Segment:     segment,
		StartAt:     startAt,
	}
	if f.serverCPUs > 0 {
		cfg.ServerCPUList, cfg.ClientCPUList = f.serverSet.String(), f.clientSet.String()
	}
	if fl.Changed("records") {
		// Only a size asked for is named on the wire and in the cells'
		// keys: the default run stays the original experiment's.
		cfg.Records = f.records
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
	if err := f.tls.apply(&cfg, f.target); err != nil {
		return cfg, err
	}
	if cfg.Target == "" {
		cfg.Target = "127.0.0.1:0" // placeholder for Validate; the child's address replaces it
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// jobIndexEnv is where a Kubernetes Indexed Job puts its pod's index, which
// --segment auto/N reads.
const jobIndexEnv = "JOB_COMPLETION_INDEX"

// parseSegmentFlags reads --segment and --start-at ("" for either: none).
// A relative --start-at (+10s) counts from now.
func parseSegmentFlags(segment, startAt string, now time.Time) (results.Segment, time.Time, error) {
	var seg results.Segment
	var at time.Time
	if n, ok := strings.CutPrefix(segment, "auto/"); ok {
		// A Kubernetes Indexed Job numbers its pods from 0 in
		// JOB_COMPLETION_INDEX; segments count from 1.
		idx, err := strconv.Atoi(os.Getenv(jobIndexEnv))
		if err != nil || idx < 0 {
			return seg, at, fmt.Errorf("--segment auto/%s: $%s is %q, want the 0-based index of an Indexed Job's pod", n, jobIndexEnv, os.Getenv(jobIndexEnv))
		}
		segment = strconv.Itoa(idx+1) + "/" + n
	}
	if segment != "" {
		s, err := results.ParseSegment(segment)
		if err != nil {
			return seg, at, fmt.Errorf("--%w", err)
		}
		seg = s
	}
	switch {
	case startAt == "":
	case strings.HasPrefix(startAt, "+"):
		d, err := time.ParseDuration(startAt[1:])
		if err != nil || d < 0 {
			return seg, at, fmt.Errorf("--start-at %q: want +DURATION (e.g. +10s) or an RFC 3339 time", startAt)
		}
		at = now.Add(d)
	default:
		t, err := time.Parse(time.RFC3339, startAt)
		if err != nil {
			return seg, at, fmt.Errorf("--start-at %q: want an RFC 3339 time (e.g. 2026-05-01T12:00:00Z) or +DURATION", startAt)
		}
		at = t
	}
	return seg, at, nil
}

// jsonRecordBound bounds one record's JSON in an upload, comma included:
// the embedded records encode to about 220 B each (the longest under 400),
// and a generated record only has a longer id.
const jsonRecordBound = 512

// ownServerArgs is the command line of the server run starts itself. Its
// body limit is the server's default unless the run uploads more: then it
// is raised to fit the largest upload (JSON, the larger encoding), so the
// payload sweep measures the protocols, not the limit. Against --target the
// server's own limit stands, and an upload above it is an error class
// (http-413, grpc-ResourceExhausted) like any other.
func ownServerArgs(cfg loadgen.Config) []string {
	args := []string{"serve", "--addr", "127.0.0.1:0"}
	if cfg.ServerCPUList != "" {
		args = append(args, "--cpus", cfg.ServerCPUList)
	}
	if b := uploadBound(cfg); b > server.DefaultMaxBody {
		args = append(args, "--max-body", strconv.FormatInt(b, 10))
	}
	return args
}

// uploadBound is an upper bound of the largest request body the run sends,
// in bytes: 0 without the post scenario.
func uploadBound(cfg loadgen.Config) int64 {
	if !slices.Contains(cfg.Scenarios, api.Post) {
		return 0
	}
	n := api.DefaultRecords
	if len(cfg.Records) > 0 {
		n = slices.Max(cfg.Records)
	}
	return int64(n)*jsonRecordBound + 1<<20 // plus room for the brackets and the headers
}

// expandAll checks names against the known ones, expanding "all".
func expandAll[T ~string](flag string, names []string, known []T) ([]T, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no value", flag)
	}
	var out []T
	for _, name := range names {
		n := T(strings.TrimSpace(name))
		switch {
		case n == "all":
			for _, k := range known {
				if !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
		case !slices.Contains(known, n):
			return nil, fmt.Errorf("%s: unknown value %q (want %s, or all)", flag, n, joinNames(known))
		case slices.Contains(out, n):
			return nil, fmt.Errorf("%s: %q given twice", flag, n)
		default:
			out = append(out, n)
		}
	}
	return out, nil
}

// commandLine is the command line as given, with the token masked.
func commandLine(cmd *cobra.Command) []string {
	out := []string{cmd.Name()}
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		v := fl.Value.String()
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		if fl.Name == "token" {
			v = "***"
		}
		out = append(out, "--"+fl.Name+"="+v)
	})
	return out
}

// run starts the own server if needed, runs the load generator and writes
// the results, even partial ones.
func (f *runFlags) run(cmd *cobra.Command, cfg loadgen.Config) error {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	ui := newRunUI(stderr, f.quiet)
	// Warnings are in the table; on the terminal that shows it, once is enough.
	ui.muteWarnings = f.out == "" && slices.Contains(f.formats, "table") && isTerminal(cmd.OutOrStdout())
	cfg.Logger = slog.New(ui)

	if cfg.OwnServer {
		stop, err := f.startOwnServer(ctx, ui, &cfg)
		if err != nil {
			return err
		}
		defer stop()
	}
	cfg.Progress = ui.progress
	stdout := cmd.OutOrStdout()
	// The table to stdout is printed as the run goes: each section as soon
	// as its cells are measured, the summary at the end.
	var live *report.Live
	if f.out == "" && f.formats[0] == "table" {
		out := ui.stdout(stdout)
		cfg.Started = func(h *results.Result) { live = report.NewLive(out, h); out.flush() }
		cfg.Measured = func(cells []results.Cell) {
			if live != nil {
				live.Group(cells)
				out.flush()
			}
		}
		defer func() {
			if live != nil {
				out.flush()
			}
		}()
	}

	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			pf.Close()
			return err
		}
		defer func() { pprof.StopCPUProfile(); pf.Close() }()
	}
	res, err := loadgen.Run(ctx, cfg)
	ui.done()
	if res != nil {
		analysis.Apply(res)
		// The summary ends the run on stderr, unless the live table just
		// ended with it on the same terminal.
		if live == nil || !isTerminal(stdout) {
			defer ui.summary(res)
		}
	}
	if res == nil {
		if errors.Is(err, loadgen.ErrInterrupted) {
			return &exitError{130, errors.New("interrupted before any cell was measured")}
		}
		return err
	}
	if werr := f.write(ui, live, res); werr != nil {
		return errors.Join(err, werr)
	}
	switch {
	case errors.Is(err, loadgen.ErrInterrupted):
		return &exitError{130, fmt.Errorf("interrupted: partial results (%d cells) written", len(res.Cells))}
	case err != nil:
		return fmt.Errorf("%w (partial results, %d cells, written)", err, len(res.Cells))
	}
	if bad := res.Unusable(); len(bad) > 0 {
		return fmt.Errorf("%d cell(s) cannot be trusted (results written): %s", len(bad), strings.Join(bad, "; "))
	}
	return nil
}

// startOwnServer starts `meteorbench serve` as a child on loopback for a
// run without --target, points cfg at it and pins both sides when asked.
// stop ends the child.
func (f *runFlags) startOwnServer(ctx context.Context, ui *runUI, cfg *loadgen.Config) (stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable to start the server: %w", err)
	}
	var env []string
	if cfg.Token != "" {
		env = append(env, tokenEnv+"="+cfg.Token)
	}
	tlsArgs, trust, cleanup, err := f.tls.ownServer(cfg)
	if err != nil {
		return nil, err
	}
	srv, err := child.Start(ctx, exe, append(ownServerArgs(*cfg), tlsArgs...), env)
	if err != nil {
		cleanup()
		if ctx.Err() != nil {
			return nil, &exitError{130, errors.New("interrupted")}
		}
		return nil, fmt.Errorf("start own server: %w", err)
	}
	stop = func() {
		if err := srv.Stop(childStopGrace); err != nil {
			ui.note("own server: %v", err)
		}
		cleanup()
	}
	cfg.Target = srv.Addr
	if err := trust(); err != nil {
		stop()
		return nil, err
	}
	ui.note("started own server (meteorbench serve) on %s", srv.Addr)
	if f.serverCPUs > 0 {
		if err := cpuset.Pin(f.clientSet); err != nil {
			stop()
			return nil, fmt.Errorf("--server-cpus: pin the load generator to CPUs %s: %w", f.clientSet, err)
		}
		ui.note("own server pinned to CPUs %s, load generator to CPUs %s (GOMAXPROCS %d)", f.serverSet, f.clientSet, runtime.GOMAXPROCS(0))
	}
	return stop, nil
}

// outputPlan is where the result goes: --format to stdout or --out, and
// --report; when a file cannot be written, the table goes to stdout and
// the JSON document to a fallback file named in the error.
func (f *runFlags) outputPlan(stdout io.Writer) *output.Plan {
	p := outputPlan(stdout, f.formats, f.out, "meteorbench.json") // named after the run's start by write
	if f.report != "" {
		format, _ := report.FormatForPath(f.report) // checked in config
		p.Extra = []output.File{{Path: f.report, Format: format}}
	}
	return p
}

// write renders the result where f.plan says. The live table, when there
// is one, is out already but for its end.
func (f *runFlags) write(ui *runUI, live *report.Live, res *results.Result) error {
	f.plan.Wrote = func(file output.File, _ int) { ui.note("wrote %s", file.Path) }
	f.plan.Fallback.Name = "meteorbench-" + res.Started.Format("20060102-150405") + ".json"
	render := renderer(context.Background(), res) // a cancelled run still writes what it measured
	return f.plan.Write(context.Background(), func(w io.Writer, format string) error {
		if live != nil && format == "table" {
			l := live
			live = nil
			return l.Finish(res)
		}
		return render(w, format)
	})
}

// joinNames lists typed names: "rest, grpc".
func joinNames[T ~string](names []T) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = string(n)
	}
	return strings.Join(parts, ", ")
}
