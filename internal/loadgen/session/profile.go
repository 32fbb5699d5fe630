package session

// CPU profiles of a cell's measured windows (run --profile): the load
// generator's own (runtime/pprof, started and stopped with the phase) and
// the server's, over HTTP from net/http/pprof's /debug/pprof/profile
// (meteorbench serve --pprof, the own server, or --server-pprof URL),
// asked for before the server's counters are read and ended (POST
// /debug/pprof/profile/stop, which meteorbench's server has) after they
// are read again: the profile covers the window the server's CPU per call
// is measured over. A server without the stop path (a user's net/http/pprof)
// profiles for ?seconds= the window's hard bound (its soft end plus the
// grace for calls still running) in whole seconds, rounded up; its tail
// is idle. Each cell's windows are merged, counted by package cpubreakdown,
// and saved with --profile DIR.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/cpubreakdown"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/summary"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/stats"
	"github.com/meteorbench/meteorbench/internal/target"
)

// ErrServerPprof is the error (wrapped) of a --server-pprof URL that does
// not answer as a profiling endpoint: a usage error (exit 2), before
// anything is measured.
var ErrServerPprof = errors.New("no profiling endpoint")

// FewSamples is the fewest samples a breakdown is given without a warning:
// 100 samples know the total to about ±10%.
const FewSamples = 100

// MinCoverage is the least share of the counters' CPU a profile of
// FewSamples or more is expected to see without a warning (and 2 -
// MinCoverage the most): Go's profiler saw 79-92% of it in a run on a
// 2-core VM at load average 15 (docs/why.md).
const MinCoverage = 0.75

// ClientSource is a client breakdown's Source.
const ClientSource = "load generator (runtime/pprof)"

// profiler is how a session profiles the server: each protocol's profile
// URL, or why it has none.
type profiler struct {
	hc      *http.Client
	ends    map[api.Protocol]endpoint
	token   string
	costs   []cellCost // one per cell with profiled and unprofiled windows
	profile bool       // any window profiled
}

// endpoint is where one protocol's server is profiled.
type endpoint struct {
	url string // .../debug/pprof/profile; "" when the server's stacks are unknown
	why string // why url is empty
}

// ParseServerPprof reads --server-pprof: one URL (ProfileURL's forms) for
// every protocol's server, or one per protocol as --target and
// --server-pid take them ("rest=URL,grpc=URL").
func ParseServerPprof(s string) (target.PerProtocol[string], error) {
	if i, j := strings.Index(s, "://"), strings.Index(s, "="); i >= 0 && (j < 0 || i < j) {
		u, err := ProfileURL(s) // one URL, maybe with a query
		return target.PerProtocol[string]{All: u}, err
	}
	v, err := target.Parse(s, ProfileURL)
	if err != nil && !strings.Contains(err.Error(), "--server-pprof") {
		err = fmt.Errorf("--server-pprof: %w", err)
	}
	return v, err
}

// ProfileURL is the CPU profile URL of what a user gives as
// --server-pprof: a whole .../debug/pprof/profile URL, the
// .../debug/pprof/ folder, or a server's root.
func ProfileURL(given string) (string, error) {
	u, err := url.Parse(given)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--server-pprof %q: want an http:// or https:// URL (e.g. http://127.0.0.1:6060/debug/pprof/profile)", given)
	}
	p := strings.TrimSuffix(u.Path, "/")
	switch {
	case strings.HasSuffix(p, "/profile"):
	case strings.HasSuffix(p, "/debug/pprof"):
		p += "/profile"
	case p == "":
		p = "/debug/pprof/profile"
	default:
		return "", fmt.Errorf("--server-pprof %q: want net/http/pprof's profile URL (…/debug/pprof/profile), its folder or the server's root", given)
	}
	u.Path, u.RawQuery = p, ""
	return u.String(), nil
}

// openProfiler finds where each protocol's server profiles come from:
// --server-pprof (which must answer, else ErrServerPprof), or the
// target's own /debug/pprof/; a server that has none, or a --server-pid,
// leaves that server's side unknown with why (warned once per why).
func (r *Session) openProfiler(ctx context.Context, warn func(string)) error {
	cfg := r.cfg
	p := &profiler{hc: &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 2}}, token: cfg.Token, ends: map[api.Protocol]endpoint{}}
	r.prof = p
	if cfg.TLSOnly() && (cfg.ServerPprof.IsZero() || cfg.OwnServer) {
		r.dialOverTLS(p.hc.Transport.(*http.Transport)) // the target's port is TLS only
	}
	warned := map[string]bool{}
	checked := map[string]endpoint{} // by URL: a server answers once
	for _, proto := range cfg.Protocols {
		e, err := p.open(ctx, cfg, proto, checked)
		if err != nil {
			return err
		}
		p.ends[proto] = e
		if e.why != "" && !warned[e.why] {
			warned[e.why] = true
			warn("--profile: server CPU breakdown unknown: " + e.why)
		}
	}
	return nil
}

// open finds proto's profiling endpoint.
func (p *profiler) open(ctx context.Context, cfg plan.Config, proto api.Protocol, checked map[string]endpoint) (endpoint, error) {
	given := cfg.ServerPprof.For(proto)
	switch {
	case given == "" && !cfg.ServerPprof.IsZero():
		return endpoint{why: fmt.Sprintf("--server-pprof names no URL for %s", proto)}, nil
	case given == "" && !cfg.ServerPID.IsZero():
		return endpoint{why: "only the server's CPU totals are known: --server-pid reads /proc/PID/stat, which has no stacks; for a Go server with net/http/pprof give --server-pprof URL"}, nil
	case given == "":
		for _, a := range cfg.Addresses(cfg.Protocols) {
			if a.HTTP1 {
				given = "http://" + a.Addr + server.PprofPrefix
				break
			}
		}
	}
	if given == "" {
		return endpoint{why: "the target has no HTTP address to ask /debug/pprof/ of; give --server-pprof URL"}, nil
	}
	u, err := ProfileURL(given)
	if err != nil {
		return endpoint{}, err
	}
	if e, ok := checked[u]; ok {
		return e, nil
	}
	explicit := !cfg.ServerPprof.IsZero() // given, or the own server's
	// The profile's folder answers a GET (net/http/pprof's index, or
	// meteorbench's) without starting a profile.
	index := strings.TrimSuffix(u, "profile")
	code, err := p.get(ctx, index)
	var e endpoint
	switch {
	case err != nil && explicit:
		return e, fmt.Errorf("--server-pprof %s: %w: %w", given, ErrServerPprof, err)
	case err == nil && code == http.StatusOK:
		e.url = u
	case explicit:
		return e, fmt.Errorf("--server-pprof %s: %w: GET %s answered status %d", given, ErrServerPprof, index, code)
	case err != nil:
		e.why = fmt.Sprintf("GET %s: %v", index, err)
	case code == http.StatusUnauthorized:
		e.why = fmt.Sprintf("the target's %s refused the token (status 401): give --token", server.PprofPrefix)
	default:
		e.why = fmt.Sprintf("the target serves no %s (status %d): run it with meteorbench serve --pprof, or give --server-pprof URL", server.PprofPrefix, code)
	}
	checked[u] = e
	return e, nil
}

// get asks url and returns its status (the body read and dropped).
func (p *profiler) get(ctx context.Context, u string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, HealthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	p.authorize(req)
	resp, err := p.hc.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, nil
}

func (p *profiler) authorize(req *http.Request) {
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
}

// profiles are a window's profiles as they are taken.
type profiles struct {
	p      *profiler
	url    string // the server's profile URL
	cancel context.CancelFunc
	server chan capture // the server's, when asked
	client bytes.Buffer
	// clientErr is why the client's profile did not start.
	clientErr error
	w         cpubreakdown.Window
}

// capture is the server's profile of a window, or why there is none.
type capture struct {
	prof *profile.Profile
	why  string
}

// profiled reports whether spec's window is profiled: every window of a
// cell measured once, every other one (the first, third...) of a repeated
// cell, so that a run measures what profiling costs.
func (r *Session) profiled(spec plan.Spec) bool {
	return r.prof != nil && (r.cfg.Repeat < 2 || spec.Repeat%2 == 0)
}

// startProfiles starts the server's profile (asked, not waited for beyond
// the request written) for a window of at most hard (the phase's hard
// bound: its soft end plus the grace for calls still running, which a
// saturated probe uses), then the client's. The stop path ends the
// server's profile with the window; a server without one profiles for
// hard's whole seconds. Asked for the soft end only, a saturated fit
// probe's server profile had ended before its calls did: it saw 28-58%
// of the counted CPU. Nil when the window is not profiled.
func (r *Session) startProfiles(ctx context.Context, spec plan.Spec, hard time.Duration) *profiles {
	if !r.profiled(spec) {
		return nil
	}
	p := r.prof
	p.profile = true
	e := p.ends[spec.Protocol]
	ps := &profiles{p: p, url: e.url}
	ps.w.ServerWhy = e.why
	if e.url != "" {
		secs := max(1, int(math.Ceil(hard.Seconds())))
		secs = min(secs, server.PprofMaxSeconds)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(secs)*time.Second+30*time.Second)
		ps.cancel = cancel
		ps.server = make(chan capture, 1)
		written := make(chan struct{})
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { close(written) }}
		go func() {
			c := p.fetch(httptrace.WithClientTrace(cctx, trace), fmt.Sprintf("%s?seconds=%d", e.url, secs))
			select {
			case <-written:
			default:
				close(written) // never written: do not wait for it
			}
			ps.server <- c
		}()
		<-written
	}
	ps.clientErr = pprof.StartCPUProfile(&ps.client)
	return ps
}

// fetch takes one CPU profile from u.
func (p *profiler) fetch(ctx context.Context, u string) capture {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return capture{why: err.Error()}
	}
	p.authorize(req)
	resp, err := p.hc.Do(req)
	if err != nil {
		return capture{why: fmt.Sprintf("GET %s: %v", u, err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return capture{why: fmt.Sprintf("GET %s: %v", u, err)}
	}
	if resp.StatusCode != http.StatusOK {
		return capture{why: fmt.Sprintf("GET %s: status %d: %.200s", u, resp.StatusCode, bytes.TrimSpace(b))}
	}
	prof, err := cpubreakdown.Parse(b)
	if err != nil {
		return capture{why: fmt.Sprintf("GET %s: %v", u, err)}
	}
	return capture{prof: prof}
}

// stopClient ends the load generator's profile.
func (ps *profiles) stopClient() {
	if ps == nil {
		return
	}
	if ps.clientErr != nil {
		ps.w.ClientWhy = "the load generator's profile did not start: " + ps.clientErr.Error()
		return
	}
	pprof.StopCPUProfile()
	prof, err := cpubreakdown.Parse(ps.client.Bytes())
	if err != nil {
		ps.w.ClientWhy = err.Error()
		return
	}
	ps.w.Client = prof
}

// stopServer ends the server's profile (POST its stop path; a server
// without one ends it at its ?seconds=) and waits for it.
func (ps *profiles) stopServer(ctx context.Context) *cpubreakdown.Window {
	if ps == nil {
		return nil
	}
	if ps.server != nil {
		defer ps.cancel()
		stop := strings.TrimSuffix(ps.url, "profile") + "profile/stop"
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), HealthTimeout)
		if req, err := http.NewRequestWithContext(sctx, http.MethodPost, stop, nil); err == nil {
			ps.p.authorize(req)
			if resp, err := ps.p.hc.Do(req); err == nil {
				io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
				resp.Body.Close()
			}
		}
		cancel()
		c := <-ps.server
		ps.w.Server, ps.w.ServerWhy = c.prof, c.why
		ps.w.ServerSource = ps.url
	}
	return &ps.w
}

// cellCost is one cell's profiled windows against its others: the ratio
// of their medians, each figure (NaN where unknown).
type cellCost struct{ server, client, p50 float64 }

// breakdowns gives each of cells (summary.Repeats of ms) its CPU
// breakdowns from its windows' profiles, saves them (--profile DIR), and
// keeps what profiling cost the cell. warn is told of a profile not saved.
func (r *Session) breakdowns(ms []summary.Measured, cells []results.Cell, warn func(string)) {
	if r.prof == nil {
		return
	}
	for i := range cells {
		c := &cells[i]
		var on, off []*summary.Measured
		for j := range ms {
			if ms[j].Cell.CellKey == c.CellKey {
				if ms[j].Profile != nil {
					on = append(on, &ms[j])
				} else {
					off = append(off, &ms[j])
				}
			}
		}
		if len(on) == 0 {
			continue
		}
		c.ServerCPUBreakdown = r.breakdown(c.CellKey, on, true, warn)
		c.ClientCPUBreakdown = r.breakdown(c.CellKey, on, false, warn)
		for i, b := range []*results.CPUBreakdown{c.ServerCPUBreakdown, c.ClientCPUBreakdown} {
			if b.Known() && b.Samples < FewSamples {
				c.Warnings = append(c.Warnings, fmt.Sprintf("%s CPU breakdown from %d samples (one per 10 ms of CPU): its total is known to about ±%s; measure longer (--duration)", [2]string{"server", "client"}[i], b.Samples, format.Percent(1/math.Sqrt(float64(b.Samples)))))
			} else if b.Known() && b.Coverage != nil && (*b.Coverage < MinCoverage || *b.Coverage > 2-MinCoverage) {
				c.Warnings = append(c.Warnings, fmt.Sprintf("%s CPU profile saw %s of the CPU the counters measured over the same windows (outside %s-%s): its categories' µs per call are their shares of the counters' figure, as if the profiler had missed each alike; Go's profiler misses more on a busy machine (docs/why.md)", [2]string{"server", "client"}[i], format.Percent(*b.Coverage), format.Percent(MinCoverage), format.Percent(2-MinCoverage)))
			}
		}
		if len(off) > 0 {
			r.prof.costs = append(r.prof.costs, costOf(on, off))
		}
	}
}

// breakdown is one side's breakdown of a cell's profiled windows.
func (r *Session) breakdown(k results.CellKey, on []*summary.Measured, server bool, warn func(string)) *results.CPUBreakdown {
	var (
		ps    []*profile.Profile
		calls int64
		cpu   float64 // µs, the counters'
		known = true
	)
	for _, m := range on {
		w := m.Profile
		prof, why := w.Client, w.ClientWhy
		if server {
			prof, why = w.Server, w.ServerWhy
		}
		if prof == nil {
			return &results.CPUBreakdown{Unknown: cmpOr(why, "no profile")}
		}
		ps = append(ps, prof)
		calls += m.Cell.Calls
		per := m.Cell.ClientCPUUSPerCall
		if server {
			if m.Cell.ServerCPUUSPerCall == nil {
				known = false
			} else {
				per = *m.Cell.ServerCPUUSPerCall
			}
		}
		cpu += per * float64(m.Cell.Calls)
	}
	merged, err := cpubreakdown.Merge(ps)
	if err != nil {
		return &results.CPUBreakdown{Unknown: "merge the windows' profiles: " + err.Error()}
	}
	var cpuUS *float64
	if known && calls > 0 {
		v := cpu / float64(calls)
		cpuUS = &v
	}
	b := cpubreakdown.Of(cpubreakdown.Count(merged), calls, cpuUS)
	b.Windows = len(on)
	b.Source = ClientSource
	if server {
		b.Source = on[0].Profile.ServerSource
	}
	if dir := r.cfg.ProfileDir; dir != "" {
		side := "client"
		if server {
			side = "server"
		}
		name := filepath.Join(dir, strings.ReplaceAll(k.Key(), "/", "_")+"."+side+".pprof")
		if err := writeProfile(name, merged); err != nil {
			warn(fmt.Sprintf("--profile %s: %v", dir, err))
		} else {
			b.File = name
		}
	}
	return b
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// writeProfile saves p (gzipped protobuf, as go tool pprof reads it).
func writeProfile(name string, p *profile.Profile) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := p.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// costOf compares a cell's profiled windows with its others: each
// figure's median over the first over its median over the second, minus 1.
func costOf(on, off []*summary.Measured) cellCost {
	ratio := func(f func(c *results.Cell) (float64, bool)) float64 {
		med := func(ms []*summary.Measured) float64 {
			var vs []float64
			for _, m := range ms {
				if v, ok := f(&m.Cell); ok {
					vs = append(vs, v)
				}
			}
			if len(vs) == 0 {
				return math.NaN()
			}
			return stats.Summarize(vs).Median
		}
		a, b := med(on), med(off)
		if !(b > 0) {
			return math.NaN()
		}
		return a/b - 1
	}
	return cellCost{
		server: ratio(func(c *results.Cell) (float64, bool) {
			if c.ServerCPUUSPerCall == nil || c.Calls == 0 {
				return 0, false
			}
			return *c.ServerCPUUSPerCall, true
		}),
		client: ratio(func(c *results.Cell) (float64, bool) { return c.ClientCPUUSPerCall, c.Calls > 0 }),
		p50:    ratio(func(c *results.Cell) (float64, bool) { return c.LatencyUS.P50, c.Calls > 0 }),
	}
}

// cost is what profiling cost the run: the median over the cells of each
// cell's ratio.
func (p *profiler) cost(repeat int) *results.ProfilingCost {
	if p == nil || !p.profile {
		return nil
	}
	out := &results.ProfilingCost{Cells: len(p.costs)}
	if repeat < 2 {
		out.Note = "not measured: every window was profiled (--repeat 2 or more alternates profiled and unprofiled windows, interleaved, and compares them)"
		return out
	}
	med := func(f func(c cellCost) float64) *float64 {
		var vs []float64
		for _, c := range p.costs {
			if v := f(c); !math.IsNaN(v) {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			return nil
		}
		m := stats.Summarize(vs).Median
		return &m
	}
	out.ServerCPUPerCall = med(func(c cellCost) float64 { return c.server })
	out.ClientCPUPerCall = med(func(c cellCost) float64 { return c.client })
	out.P50 = med(func(c cellCost) float64 { return c.p50 })
	out.Note = fmt.Sprintf("profiled windows (the 1st, 3rd...) against the others of the same cells, interleaved; median over %d cells of each cell's ratio of medians; the cells' figures are medians over all their windows, profiled or not", len(p.costs))
	return out
}

// closeProfiler releases the profiler's connections.
func (r *Session) closeProfiler() {
	if r.prof != nil {
		r.prof.hc.CloseIdleConnections()
	}
}
