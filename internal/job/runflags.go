package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/flagvalue"
	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/ownserver"
	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/target"
)

// RunFlags are the flags of run, which capacity and fit share, as given:
// Config turns them into the load generator's config and the job's
// options. The messages name the flags.
type RunFlags struct {
	Target         flagvalue.Targets // checked when parsed: addresses to dial
	ServerPID      flagvalue.PIDs    // --server-pid: server CPU from /proc
	Token          string
	Scenarios      []string
	Batches        []int
	Concurrency    []int
	Links          []string
	Records        []int
	Compress       []string
	JSONCodecs     []string
	Engines        []string
	MaxWorkers     int
	Connections    []int
	Duration       time.Duration
	Iterations     int
	Warmup         time.Duration
	Timeout        time.Duration
	Rate           float64
	Repeat         int
	Formats        []string
	Out            string
	Report         string
	Quiet          bool
	CPUProfile     string
	ServerCPUs     int
	Segment        string    // --segment i/N
	StartAt        string    // --start-at RFC 3339 or +DURATION
	Mix            string    // run --mix
	Messages       []int     // --messages: the stream scenarios'
	FeedRates      []float64 // --feed-rate
	FeedTransports []string  // --feed-transport
	// ProtocolFlags are --proto and --http-version.
	ProtocolFlags
	// Capacity is a capacity search: its probes are open loop.
	Capacity  bool
	TLS       ClientTLS
	Payload   payload.Flags
	Endpoints Endpoints // run's own endpoints
	// Profile is --profile [DIR], ServerPprof --server-pprof URL.
	Profile     flagvalue.Profile
	ServerPprof string
	// Proxy is --proxy and --proxy-config.
	Proxy ProxyFlags
	// Changed reports whether the flag of that name was given.
	Changed func(name string) bool
	// CommandLine is the command line as the document records it.
	CommandLine []string
}

// Output is where the job's document goes (--format, --out, --report) and
// how it reports on stderr.
func (f *RunFlags) Output(stdout, stderr io.Writer) (Options, error) {
	p, err := report.RunOutput(stdout, f.Formats, f.Out, f.Report)
	return Options{Output: p, Stderr: stderr, Quiet: f.Quiet, CPUProfile: f.CPUProfile}, err
}

// Config turns the flags into the load generator's config, checked by its
// Validate, and the job's options; payload warnings go to stderr. It does
// no work: a bad flag fails here with one line (a usage error).
func (f *RunFlags) Config(ctx context.Context, stdout, stderr io.Writer) (plan.Config, Options, error) {
	var cfg plan.Config
	var o Options
	f.Endpoints.Changed, f.Endpoints.Schema, f.Endpoints.SchemaChecked = f.Changed, f.Payload.Schema, true // --payload's check covers --schema
	addr, err := f.Endpoints.Target(f.Target.T.String())
	if err != nil {
		return cfg, o, err
	}
	if f.Endpoints.Given() {
		f.Target.T = target.One(addr)
	}
	var links []link.Spec
	for _, text := range f.Links {
		l, err := link.Parse(text)
		if err != nil {
			return cfg, o, fmt.Errorf("--%w", err)
		}
		links = append(links, l)
	}
	// A lossy link is measured beside the same link without loss, which
	// the verdict's loss clause compares with.
	links = link.WithBaselines(links)
	if !f.Changed("repeat") && f.Iterations > 0 {
		f.Repeat = 1 // --iterations asks for a count of batches, not five times it
	}
	// What the config reads as "the default" (an empty list, a zero) is
	// no value a flag may give.
	if err := f.ProtocolFlags.check(); err != nil {
		return cfg, o, err
	}
	switch {
	case len(f.Scenarios) == 0:
		return cfg, o, errors.New("--scenario: no value")
	case len(links) == 0:
		return cfg, o, errors.New("--link: no value")
	case len(f.Records) == 0:
		return cfg, o, errors.New("--records: no value")
	case len(f.Batches) == 0:
		return cfg, o, errors.New("--batch: no value")
	case len(f.Concurrency) == 0:
		return cfg, o, errors.New("--concurrency: no value")
	case f.Changed("duration") && f.Changed("iterations"):
		return cfg, o, errors.New("--duration and --iterations are exclusive: give one")
	case f.Duration <= 0:
		return cfg, o, fmt.Errorf("--duration %v: must be positive", f.Duration)
	case f.Changed("iterations") && f.Iterations < 1:
		return cfg, o, fmt.Errorf("--iterations %d: must be at least 1", f.Iterations)
	case f.Warmup < 0:
		return cfg, o, fmt.Errorf("--warmup %v: must not be negative", f.Warmup)
	case f.Timeout <= 0:
		return cfg, o, fmt.Errorf("--timeout %v: must be positive", f.Timeout)
	case f.Repeat < 1:
		return cfg, o, fmt.Errorf("--repeat %d: must be at least 1", f.Repeat)
	}
	if o, err = f.Output(stdout, stderr); err != nil {
		return cfg, o, err
	}
	segment, err := plan.ParseSegment(f.Segment)
	if err != nil {
		return cfg, o, fmt.Errorf("--%w", err)
	}
	startAt, err := plan.ParseStartAt(f.StartAt, time.Now())
	if err != nil {
		return cfg, o, fmt.Errorf("--%w", err)
	}
	if f.Capacity && (f.Segment != "" || f.StartAt != "") {
		return cfg, o, errors.New("--segment and --start-at split a run between load generators: a capacity search cannot be split")
	}
	if !f.Changed("token") {
		f.Token = os.Getenv(server.TokenEnv)
	}
	cfg = plan.Config{
		Target:      f.Target.T,
		ServerPID:   f.ServerPID.P,
		Token:       f.Token,
		Scenarios:   flagvalue.ExpandAll(f.Scenarios, api.Scenarios()),
		Batches:     f.Batches,
		Concurrency: f.Concurrency,
		Links:       links,
		Compress:    f.Compress,
		JSONCodecs:  f.JSONCodecs,
		Engines:     f.Engines,
		Connections: f.Connections,
		Timeout:     f.Timeout,
		Rate:        f.Rate,
		MaxWorkers:  engine.MaxWorkersFor(f.Rate, f.Changed("concurrency"), f.MaxWorkers),
		Repeat:      f.Repeat,
		CommandLine: f.CommandLine,
		OwnServer:   f.Target.T.IsZero(),
		Segment:     segment,
		StartAt:     startAt,
	}
	if err := f.ProtocolFlags.Apply(&cfg, f.Changed); err != nil {
		return cfg, o, err
	}
	if err := f.Proxy.Apply(ctx, &cfg, f.Changed); err != nil { // proxy.go
		return cfg, o, err
	}
	if err := ownserver.Pin(&cfg, f.ServerCPUs, f.Rate > 0 || f.Capacity || f.Mix != ""); err != nil {
		return cfg, o, err
	}
	if f.Changed("records") {
		// Only a size asked for is named on the wire and in the cells'
		// keys: the default run stays the original experiment's.
		cfg.Records = f.Records
	}
	if f.Changed("messages") {
		cfg.Messages = f.Messages // as --records: only a count asked for is keyed
	}
	if f.Changed("feed-rate") {
		cfg.FeedRates = f.FeedRates
	}
	if f.Changed("feed-transport") {
		if cfg.Sweeps == nil {
			cfg.Sweeps = map[string][]string{}
		}
		cfg.Sweeps["feed_transport"] = f.FeedTransports
	}
	if cfg.Payload, err = f.Payload.Load(f.Changed("grpc-method") || f.Changed("endpoints")); err != nil {
		return cfg, o, err
	}
	if cfg.Payload != nil {
		for _, n := range cfg.Payload.Notes {
			fmt.Fprintln(stderr, "meteorbench: note:", n)
		}
		for _, w := range cfg.Payload.Warnings {
			fmt.Fprintln(stderr, "meteorbench: warning:", w)
		}
	}
	if f.Changed("iterations") {
		cfg.Iterations = f.Iterations
	} else {
		cfg.Duration = f.Duration
	}
	cfg.Warmup = f.Warmup
	if f.Warmup == 0 {
		cfg.Warmup = -1 // none
	}
	if err := f.TLS.Apply(&cfg, f.Target.T.String()); err != nil {
		return cfg, o, err
	}
	if err := f.Endpoints.Apply(ctx, &cfg); err != nil {
		return cfg, o, err
	}
	if err := f.applyMix(&cfg); err != nil {
		return cfg, o, err
	}
	if err := f.applyTarget(&cfg); err != nil {
		return cfg, o, err
	}
	if err := f.applyProfile(&cfg); err != nil {
		return cfg, o, err
	}
	check := cfg
	if check.Target.IsZero() {
		check.Target = target.One("127.0.0.1:0") // the own server's address replaces it
	}
	if err := check.Validate(); err != nil {
		return cfg, o, fmt.Errorf("--%w", err)
	}
	return cfg, o, nil
}

// applyTarget reads --server-pid into cfg (--target's per-protocol form
// narrows the default protocols in ProtocolFlags.Apply): a --server-pid
// must name a process on this machine, and a protocol that has a server
// (an address of --target, or a side of the endpoints).
func (f *RunFlags) applyTarget(cfg *plan.Config) error {
	pids := cfg.ServerPID
	if pids.IsZero() {
		return nil
	}
	if cfg.Target.IsZero() && cfg.Endpoints == nil {
		return errors.New("--server-pid reads the CPU of the server of --target or of your endpoints: run's own server reports its CPU itself")
	}
	for _, p := range pids.Protocols() {
		switch {
		case cfg.Endpoints != nil && !slices.Contains(cfg.Endpoints.Protocols(), p):
			// rest-protobuf follows rest=P unless named: endpoints have
			// no rest-protobuf side, and rest=P,grpc=P names their two.
			if pids.Split() && (p != api.RESTProtobuf || strings.Contains(pids.String(), string(api.RESTProtobuf)+"=")) {
				return fmt.Errorf("--server-pid %s: your endpoints have no %s side", pids, p)
			}
			continue
		case cfg.Endpoints == nil && cfg.Target.For(p) == "":
			return fmt.Errorf("--server-pid %s: --target gives %s no address", pids, p)
		}
		for _, pid := range pids.For(p).List() {
			if _, err := session.ProcCPU(pid); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyProfile reads --profile and --server-pprof into cfg.
func (f *RunFlags) applyProfile(cfg *plan.Config) error {
	switch {
	case f.ServerPprof != "" && !f.Profile.On():
		return errors.New("--server-pprof takes the server's profiles for --profile: give --profile too")
	case !f.Profile.On():
		return nil
	case f.CPUProfile != "":
		return errors.New("--profile and --cpuprofile: a process has one CPU profiler; give one")
	case f.ServerPprof != "" && cfg.Target.IsZero():
		return errors.New("--server-pprof profiles the server of --target: run's own server is profiled without it")
	}
	if f.ServerPprof != "" {
		u, err := session.ParseServerPprof(f.ServerPprof)
		if err != nil {
			return err // says --server-pprof
		}
		cfg.ServerPprof = u
	}
	if err := f.Profile.MakeDir(); err != nil {
		return err
	}
	cfg.Profile, cfg.ProfileDir = true, f.Profile.Dir()
	return nil
}

// applyMix reads run --mix into cfg: the mix's scenarios and total rate,
// and, unless --concurrency is given, plan.MixWorkers workers. The
// pairs of an endpoints file are its scenarios; a file whose pairs have
// rates is the traffic --mix would give (--mix then overrides it).
func (f *RunFlags) applyMix(cfg *plan.Config) error {
	var traffic results.Mix
	if cfg.Endpoints != nil && f.Mix == "" && !f.Changed("scenario") && !f.Changed("rate") && !f.Changed("iterations") {
		traffic = cfg.Endpoints.Traffic()
	}
	if f.Mix == "" && traffic == nil {
		return nil
	}
	switch {
	case f.Changed("scenario"):
		return errors.New("--mix names the scenarios: drop --scenario")
	case f.Changed("rate"):
		return errors.New("--mix gives each scenario its rate: drop --rate")
	case f.Changed("iterations"):
		return errors.New("--mix is bounded by --duration, not --iterations")
	}
	m := traffic
	if f.Mix != "" {
		known := api.Scenarios()
		if cfg.Endpoints != nil {
			known = cfg.Endpoints.Scenarios()
		}
		var err error
		if m, err = results.ParseMixOf(f.Mix, known); err != nil {
			return fmt.Errorf("--mix: %w", err)
		}
	}
	cfg.Mix, cfg.Scenarios, cfg.Rate = m, nil, 0
	if !f.Changed("concurrency") {
		cfg.Concurrency = []int{plan.MixWorkers(m)}
	}
	return nil
}
