package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/engine"
	"github.com/meteorbench/meteorbench/internal/loadgen/summary"
)

// scraper reads the target's /metrics over its own connection, not
// counted as load.
type scraper struct {
	hc  *http.Client
	url string
}

func newScraper(target string) *scraper {
	return &scraper{
		hc:  &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 1}},
		url: "http://" + target + "/metrics",
	}
}

// close closes the scraper's idle connection.
func (s *scraper) close() { s.hc.CloseIdleConnections() }

// scrape reads the metrics, within a short deadline.
func (s *scraper) scrape(ctx context.Context) (summary.ServerSample, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return summary.ServerSample{}, err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return summary.ServerSample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return summary.ServerSample{}, fmt.Errorf("GET /metrics: status %d", resp.StatusCode)
	}
	return ParseMetrics(resp.Body)
}

// openScraper opens a scraper of the /metrics at addr, over TLS when
// every cell is (as controlOverTLS does for the target's), and reads it
// once: a server without usable metrics is an error, its scraper closed.
func (r *Session) openScraper(ctx context.Context, addr string) (*scraper, error) {
	s := newScraper(addr)
	if r.cfg.TLSOnly() {
		r.dialOverTLS(s.hc.Transport.(*http.Transport))
	}
	if _, err := s.scrape(ctx); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// Scrape reads the /metrics of the server at target once, over a
// connection of its own, within the scrapes' short deadline (which no
// cancellation cuts short, as in a run).
func Scrape(target string) (summary.ServerSample, error) {
	s := newScraper(target)
	defer s.close()
	return s.scrape(context.Background())
}

// metricProcs is the Go collector's GOMAXPROCS gauge.
const metricProcs = "go_sched_gomaxprocs_threads"

// The process collector's resident set and the Go collector's heap in use.
const (
	metricRSS  = "process_resident_memory_bytes"
	metricHeap = "go_memstats_heap_inuse_bytes"
)

// ParseMetrics reads the Prometheus text format (with prometheus/common's
// own parser) and keeps what the load generator needs: the server's CPU
// counter and its request counters.
func ParseMetrics(r io.Reader) (summary.ServerSample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return summary.ServerSample{}, fmt.Errorf("read /metrics: %w", err)
	}
	cpu, ok := fams[api.MetricCPU]
	if !ok || len(cpu.GetMetric()) != 1 {
		return summary.ServerSample{}, fmt.Errorf("/metrics has no %s", api.MetricCPU)
	}
	out := summary.ServerSample{
		CPU:      time.Duration(metricValue(cpu.GetMetric()[0]) * float64(time.Second)),
		Requests: map[string]float64{},
	}
	for name, v := range map[string]*float64{metricProcs: &out.Procs, metricRSS: &out.RSS, api.MetricPeakRSS: &out.PeakRSS, metricHeap: &out.Heap} {
		if g := fams[name].GetMetric(); len(g) == 1 {
			*v = metricValue(g[0])
		}
	}
	for _, m := range fams[api.MetricRequests].GetMetric() {
		var proto, method string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "protocol":
				proto = l.GetValue()
			case "method":
				method = l.GetValue()
			}
		}
		out.Requests[proto+"/"+method] = metricValue(m)
	}
	return out, nil
}

// metricValue is a counter's, gauge's or untyped sample's value.
func metricValue(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}

// HealthRetry is how often a run with a --start-at still ahead asks a
// target that does not answer yet again (awaitTargets).
const HealthRetry = 500 * time.Millisecond

// awaitTargets is checkTargets of the run's protocols, asked again while
// an address does not answer and cfg.StartAt is still ahead: the
// instances of a segmented run are started together with the server they
// load (an orchestrator starts them all at once; Docker Swarm has no
// depends_on), and the shared start time is the wait they were given. A
// target still unreachable at the start time fails as it would without
// one; an address that answers in the wrong protocol fails at once.
func (r *Session) awaitTargets(ctx context.Context) (notes []string, err error) {
	cfg := r.cfg
	said := false
	for {
		notes, err = r.checkTargets(ctx, cfg.Protocols) // targets.go
		var wrong *wrongProtocolError
		if err == nil || errors.As(err, &wrong) || ctx.Err() != nil || cfg.StartAt.IsZero() || time.Until(cfg.StartAt) < HealthRetry {
			return notes, err
		}
		if !said {
			cfg.Logger.Warn(fmt.Sprintf("%v: asking again until --start-at %s", err, cfg.StartAt.Format(time.RFC3339Nano)))
			said = true
		}
		if !engine.WaitUntil(ctx, time.Now().Add(HealthRetry)) {
			return notes, err
		}
	}
}

// checkHealth asks the target's /healthz, within a short deadline. Any
// HTTP answer proves the target is up; a status other than 200 is
// returned as a note.
func checkHealth(ctx context.Context, hc *http.Client, target string, deadline time.Duration) (note string, err error) {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+target+"/healthz", nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("unreachable: %w", err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("GET /healthz answered status %d", resp.StatusCode), nil
	}
	return "", nil
}
