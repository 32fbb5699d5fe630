package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/flagvalue"
	"github.com/meteorbench/meteorbench/internal/job"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/ownserver"
	"github.com/meteorbench/meteorbench/internal/proxy"
	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/server"
)

// runFlags are run's flags as parsed (capacity and fit share them),
// turned into a config by job.RunFlags.Config.
type runFlags struct{ job.RunFlags }

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
HTTP/1.1), grpc, rest-protobuf (protobuf over HTTP/1.1), the default three;
grpc-web and connect (what a browser can call of gRPC); or all.
--http-version 1.1,2 measures rest, rest-protobuf, grpc-web and connect over
both HTTP versions (grpc is always HTTP/2), and each scenario's summary then
splits REST->gRPC into encoding x transport x framing.

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
check --target' tells beforehand). REST and gRPC on ports of their own:
--target rest=HOST:PORT,grpc=HOST:PORT (either alone; a gRPC-only address
is never sent HTTP/1.1). Server CPU of a server without meteorbench's
/metrics on this machine: --server-pid PID; several summed (your proxy
and your server): --server-pid rest=P1+P2,grpc=P1+P2.

Behind the proxy a VPS runs: --proxy none,nginx,caddy,haproxy starts
Debian's proxy in front of the own server (TLS ends there; deploy/proxy),
counts its CPU as the server's, and says in each verdict what it added.

Your own endpoints instead of the contract: --rest-url URL against
--grpc-addr HOST:PORT --grpc-method pkg.Service/Method (--schema
FILE.proto, or the server's reflection), one cell pair compared like REST
and gRPC.

More load than one machine makes: --segment i/N runs share i of N of the plan
(of the workers, the rate and the iterations; a segment is not part of the
cell keys), --start-at makes the instances start together, and
'meteorbench merge' puts their results back into one.

Results go to stdout (or --out PREFIX.<ext>); progress and warnings go to
stderr. Ctrl-C stops the run and prints what was measured (exit 130).`,
		Example: `  meteorbench run
  meteorbench run --scenario small --proto grpc,rest --concurrency 1,16,64 --format json | jq .
  meteorbench run --target 127.0.0.1:8080 --rate 2000 --duration 30s --out results/run1 --format table,json,csv
  meteorbench run --target rest=127.0.0.1:8080,grpc=127.0.0.1:9090 --server-pid "$(pgrep -f my-server)"
  meteorbench run --repeat 5 --scenario large --format markdown`,
		Args: func(cmd *cobra.Command, args []string) error {
			args = f.TLS.Mode.TakeArg(cmd.Flags(), args)
			if args = f.Profile.TakeArg(cmd.Flags(), args); len(args) > 0 {
				return usageError{fmt.Errorf("run takes no arguments, got %q", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, o, err := f.config(cmd)
			if err != nil {
				return usageError{err}
			}
			cfg.GOGC = tuneGeneratorGC()
			return jobError(job.Run(cmd.Context(), cfg, o))
		},
	}
	f.addFlags(cmd.Flags())
	registerEndpoints(cmd.Flags(), &f.Endpoints)
	cmd.Flags().StringVar(&f.Mix, "mix", "", "mixed traffic, open loop: SCENARIO=CALLS/S,... (e.g. small=800,large=20,post=5; with --endpoints, the pairs' names), every scenario at its own rate at once over each protocol's shared connections; one cell per protocol with each scenario's achieved rate and latency (replaces --scenario and --rate)")
	return cmd
}

// addFlags defines run's flags on fl (capacity shares them).
func (f *runFlags) addFlags(fl *pflag.FlagSet) {
	fl.Var(&f.Target, "target", "the server to measure: host:port of one port serving REST and gRPC (meteorbench serve), or rest=HOST:PORT,grpc=HOST:PORT for servers on ports of their own (either alone; rest-protobuf= follows rest unless given; grpc-web= and connect= give those theirs); default: start one on 127.0.0.1")
	fl.Var(&f.ServerPID, "server-pid", "server CPU per call from /proc/PID/stat of this process (any server on this machine; Docker's: docker inspect -f '{{.State.Pid}}'), or rest=PID,grpc=PID; several summed: P1+P2 (your proxy and your server); 10 ms clock ticks")
	fl.StringVar(&f.Token, "token", "", "bearer token for a protected server (default $"+server.TokenEnv+")")
	registerProtocols(fl, &f.ProtocolFlags)
	fl.StringSliceVar(&f.Scenarios, "scenario", []string{"all"}, "scenarios: small, large, stream, post, or all (those four); the streams both ways, per message: upload, chat, feed")
	fl.IntSliceVar(&f.Batches, "batch", []int{100}, "calls per measured batch; a list sweeps (the original experiment: 100,200)")
	fl.IntSliceVar(&f.Concurrency, "concurrency", []int{1}, "workers running batches in parallel; a list sweeps (e.g. 1,16,64)")
	fl.StringSliceVar(&f.Links, "link", []string{"none"}, "emulated network link to the target, BANDWIDTH/RTT (kbit|mbit|gbit / us|ms|s, e.g. 100mbit/20ms), a preset (lan = 1gbit/0.5ms, vps = 100mbit/20ms, wan = 20mbit/80ms, mobile = 10mbit/50ms) or none; a list sweeps")
	fl.IntSliceVar(&f.Records, "records", []int{api.DefaultRecords}, fmt.Sprintf("payload size of large, stream and post, 1..%d records; a list sweeps (e.g. 1,10,100,1000,10000); small is measured once", api.MaxRecords))
	fl.StringSliceVar(&f.Compress, "compress", []string{plan.CompressNone}, "compression both ways: none, gzip; a list sweeps (gRPC per-message gzip, REST Content-Encoding gzip)")
	fl.StringSliceVar(&f.JSONCodecs, "json-codec", []string{"std"}, "JSON library of the rest (JSON) calls, client and server alike: "+strings.Join(plan.JSONCodecs(), ", ")+" (encoding/json, encoding/json/v2, sonic); a list sweeps; rest-protobuf and grpc are measured once")
	fl.StringSliceVar(&f.Engines, "engine", []string{"standard"}, "load generator engine: standard (net/http and grpc-go, every answer decoded, as your own Go clients) or lean (pre-built requests, answers decoded on a sample: the generator's CPU per call near wrk's and h2load's); a list sweeps")
	fl.IntSliceVar(&f.Connections, "connections", nil, "TCP (or QUIC) connections per protocol, gRPC's a pool of ClientConns with the calls spread round-robin; a list sweeps (default: gRPC, HTTP/2 and HTTP/3 1, HTTP/1.1 one per worker)")
	fl.DurationVar(&f.Duration, "duration", plan.DefaultDuration, "measured time per window of a cell (see --repeat; exclusive with --iterations)")
	fl.IntVar(&f.Iterations, "iterations", 0, "batches per cell instead of --duration (each cell is still capped at 10m)")
	fl.DurationVar(&f.Warmup, "warmup", plan.DefaultWarmup, "unmeasured time before each window, over its fresh connections (0: none)")
	fl.DurationVar(&f.Timeout, "timeout", plan.DefaultTimeout, "per-call timeout")
	fl.Float64Var(&f.Rate, "rate", 0, "open-loop: calls/s per cell shared by all workers (0: closed-loop)")
	fl.IntVar(&f.MaxWorkers, "max-workers", 0, "with --rate and no --concurrency, the workers grow as calls would otherwise start late, up to this many (default: enough for 10 s of latency at the rate); each cell records workers_used")
	fl.IntVar(&f.Repeat, "repeat", plan.DefaultRepeat, "measure every cell as K windows, interleaved with the other protocols'; report medians with confidence intervals and test every ratio (default 1 with --iterations, which counts the batches exactly)")
	fl.StringSliceVar(&f.Formats, "format", []string{"table"}, "output formats: "+strings.Join(report.Formats, ", ")+" (several: one after another, or one file each with --out)")
	fl.StringVar(&f.Out, "out", "", "write one file per format to PREFIX.<ext> instead of stdout")
	fl.StringVar(&f.Report, "report", "", "also write a report to FILE at the end, its format from the extension (.html: one self-contained page with charts; .svg, .png, .md)")
	fl.IntVar(&f.ServerCPUs, "server-cpus", ownserver.Auto, "pin the own server to N CPUs (its GOMAXPROCS follows) and the load generator to the others, so they stop competing for cores (Linux). Default: half the CPUs with the own server in closed loop; 0: no pinning")
	fl.StringVar(&f.Segment, "segment", "", "run only share i of N of the plan (i/N, e.g. 2/3; auto/N takes i from a Kubernetes Indexed Job's $JOB_COMPLETION_INDEX + 1): 1/N of the rate, of the workers and of the iterations, so N instances together make the whole load; merge their results with 'meteorbench merge'")
	fl.StringVar(&f.StartAt, "start-at", "", "start the first cell at this time, RFC 3339 (2026-05-01T12:00:00Z) or relative (+10s), so instances on several machines start together; the actual offset is recorded")
	registerClientTLS(fl, &f.TLS)
	registerPayload(fl, &f.Payload)
	fl.BoolVarP(&f.Quiet, "quiet", "q", false, "no progress bar, no warnings or notes on stderr (only errors)")
	fl.StringVar(&f.CPUProfile, "cpuprofile", "", "write the load generator's CPU profile to this file (for tuning the harness)")
	fl.MarkHidden("cpuprofile")
	fl.Var(&f.Profile, "profile", "record CPU profiles of every cell's measured windows, the server's and the load generator's, and say where each one's CPU goes (encoding, decoding, HTTP/1.1, HTTP/2, gRPC, TLS, compression, syscalls, GC, scheduler, other) per call; --profile DIR also saves each cell's profiles there for go tool pprof. The server's come from its /debug/pprof/ (the own server's, serve --pprof) or --server-pprof. With --repeat >= 2 every other window is profiled, so the run measures what profiling costs")
	fl.Lookup("profile").NoOptDefVal = flagvalue.ProfileOn
	fl.StringVar(&f.ServerPprof, "server-pprof", "", "with --profile: the server's CPU profile URL, net/http/pprof's (http://HOST:PORT/debug/pprof/profile, or its folder), or one per protocol as --target takes them (rest=URL,grpc=URL; a protocol left out: its server's breakdown unknown): a profile is taken over each cell's window")
	// The stream scenarios (upload, chat, feed).
	fl.IntSliceVar(&f.Messages, "messages", []int{api.DefaultStreamMessages}, fmt.Sprintf("messages per stream of upload, chat and feed, 1..%d; a list sweeps; a new stream opens after them (its setup timed apart)", api.MaxStreamMessages))
	fl.Float64SliceVar(&f.FeedRates, "feed-rate", []float64{0}, "records/s the server pushes on each feed stream (0: as fast as the client reads); a list sweeps")
	fl.StringSliceVar(&f.FeedTransports, "feed-transport", []string{"websocket"}, "transport of the rest (JSON) feed: websocket, sse (Server-Sent Events); a list sweeps; rest-protobuf and grpc are measured once")
	fl.StringSliceVar(&f.Proxy.Names, "proxy", []string{proxy.None}, "put the own server behind a real reverse proxy that run starts and stops: none, "+strings.Join(proxy.Names(), ", ")+" (Debian's packages); a list sweeps (none,nginx: what the proxy adds). TLS ends at the proxy; REST, gRPC-Web and Connect reach the server as HTTP/1.1, gRPC as h2c (deploy/proxy); the proxy runs on the server's CPUs and its CPU counts as the server's")
	fl.StringVar(&f.Proxy.Config, "proxy-config", "", "your own configuration of the one --proxy, a template with deploy/proxy's fields ({{.Public}}, {{.Backend}}, {{.Cert}}, ...), checked with the proxy's own check first")
}

// registerProtocols defines --proto and --http-version on fl: run's
// (capacity and fit share them) and check's.
func registerProtocols(fl *pflag.FlagSet, p *job.ProtocolFlags) {
	fl.StringSliceVar(&p.Protocols, "proto", []string{string(api.REST), string(api.RESTProtobuf), string(api.GRPC)}, "protocols: rest, rest-protobuf, grpc, grpc-web, connect (gRPC-Web and Connect, as a browser calls gRPC), or all (every one)")
	fl.StringSliceVar(&p.HTTPVersions, "http-version", []string{"1.1"}, "HTTP version of rest, rest-protobuf, grpc-web and connect: 1.1, 2 (h2c with prior knowledge; ALPN h2 under --tls); a list sweeps; grpc (always HTTP/2) is measured once")
}

// config reads the flags into job.RunFlags and turns them into the load
// generator's config and the job's options (job.RunFlags.Config).
func (f *runFlags) config(cmd *cobra.Command) (plan.Config, job.Options, error) {
	f.Changed, f.CommandLine = cmd.Flags().Changed, flagvalue.CommandLine(cmd.Name(), cmd.Flags(), "token")
	return f.Config(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
}

// takeOver hides run's flags that a command sets itself (names) and
// returns the check that refuses them given: "--NAME is "+why.
func takeOver(fl *pflag.FlagSet, why string, names ...string) func() error {
	for _, name := range names {
		fl.MarkHidden(name)
	}
	return func() error {
		for _, name := range names {
			if fl.Changed(name) {
				return usageError{fmt.Errorf("--%s is %s", name, why)}
			}
		}
		return nil
	}
}

// jobError gives a job's error its exit status: 130 when interrupted.
func jobError(err error) error {
	if ie, ok := err.(*job.InterruptedError); ok {
		return &exitError{130, ie}
	}
	if errors.Is(err, session.ErrWrongProtocol) || errors.Is(err, session.ErrNoProcess) || errors.Is(err, session.ErrServerPprof) || errors.Is(err, proxy.ErrNotStarted) {
		return usageError{err} // a target given as the wrong protocol, a --server-pid gone, a --server-pprof that is none, a proxy that did not start: the flag's to fix
	}
	return err
}
