package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/meteorbench/meteorbench/internal/results"
)

// Server metrics the load generator reads (see the brief's contract).
const (
	metricCPU      = "meteorbench_cpu_seconds_total"
	metricRequests = "meteorbench_requests_total"
)

// ServerCPUMin is the smallest server CPU delta per cell trusted without a
// warning. The counter itself has microsecond resolution, but each scrape
// costs the server some CPU and the runtime does background work (GC,
// timers); below 100 ms those are more than about 1% of the figure.
const ServerCPUMin = 100 * time.Millisecond

// methods maps a scenario to the server's method label.
var methods = map[string]string{
	results.ScenarioSmall:  "GetVersion",
	results.ScenarioLarge:  "GetLargePayloadAsList",
	results.ScenarioStream: "GetLargePayload",
	results.ScenarioPost:   "PostLargePayload",
}

// serverSample is one scrape of the server's /metrics.
type serverSample struct {
	cpu      time.Duration
	requests map[string]float64 // by "protocol/method"
}

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

// scrape reads the metrics, within a short deadline.
func (s *scraper) scrape(ctx context.Context) (serverSample, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return serverSample{}, err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return serverSample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return serverSample{}, fmt.Errorf("GET /metrics: status %d", resp.StatusCode)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics reads the Prometheus text format, keeping the two metrics
// the load generator needs.
func parseMetrics(r io.Reader) (serverSample, error) {
	out := serverSample{cpu: -1, requests: map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, value, err := ParseSample(line)
		if err != nil {
			continue // not ours to judge
		}
		switch name {
		case metricCPU:
			out.cpu = time.Duration(value * float64(time.Second))
		case metricRequests:
			out.requests[labels["protocol"]+"/"+labels["method"]] = value
		}
	}
	if err := sc.Err(); err != nil {
		return serverSample{}, fmt.Errorf("read /metrics: %w", err)
	}
	if out.cpu < 0 {
		return serverSample{}, fmt.Errorf("/metrics has no %s", metricCPU)
	}
	return out, nil
}

// ParseSample parses one sample line of the Prometheus text format:
// name{label="value",...} value [timestamp].
func ParseSample(line string) (name string, labels map[string]string, value float64, err error) {
	bad := func(why string) (string, map[string]string, float64, error) {
		return "", nil, 0, fmt.Errorf("metrics line %q: %s", line, why)
	}
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return bad("no value")
	}
	name, rest := line[:i], line[i:]
	if rest[0] == '{' {
		labels = map[string]string{}
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, " ,")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.IndexByte(rest, '=')
			if eq <= 0 || len(rest) < eq+2 || rest[eq+1] != '"' {
				return bad("bad label")
			}
			key := strings.TrimSpace(rest[:eq])
			rest = rest[eq+2:]
			var val strings.Builder
			closed := false
			for j := 0; j < len(rest); j++ {
				c := rest[j]
				if c == '\\' && j+1 < len(rest) {
					j++
					switch rest[j] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(rest[j])
					}
					continue
				}
				if c == '"' {
					rest, closed = rest[j+1:], true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return bad("unterminated label value")
			}
			labels[key] = val.String()
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return bad("no value")
	}
	value, perr := strconv.ParseFloat(fields[0], 64)
	if perr != nil {
		return bad("bad value")
	}
	return name, labels, value, nil
}

// errUnreachable marks a failed health check.
var errUnreachable = errors.New("unreachable")

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
		return "", fmt.Errorf("%w: %w", errUnreachable, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("GET /healthz answered status %d", resp.StatusCode), nil
	}
	return "", nil
}
