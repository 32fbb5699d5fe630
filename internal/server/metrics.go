package server

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/buildinfo"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/rusage"
)

// protocol indexes the pre-resolved counters by the protocol of a call.
type protocol uint8

const (
	protoREST protocol = iota
	protoRESTProtobuf
	protoGRPC
	protoGRPCWeb // gRPC-Web (connect.go)
	protoConnect // the Connect protocol (connect.go)
	numProtocols
)

var protocolNames = [numProtocols]api.Protocol{api.REST, api.RESTProtobuf, api.GRPC, api.GRPCWeb, api.Connect}

// method indexes the pre-resolved counters by the contract's method.
type method uint8

const (
	methodGetVersion method = iota
	methodGetLargePayloadAsList
	methodGetLargePayload
	methodPostLargePayload
	methodUploadStream // the streams both ways (streams.go)
	methodChat
	methodFeed
	numMethods
	noMethod = numMethods // not one of the data calls
)

var methodNames = [numMethods]string{api.MethodGetVersion, api.MethodGetLargePayloadAsList, api.MethodGetLargePayload, api.MethodPostLargePayload,
	api.MethodUploadStream, api.MethodChat, api.MethodFeed}

// metrics is the server's own registry, with every counter the request path
// touches resolved once, at start-up.
type metrics struct {
	reg      *prometheus.Registry
	requests [numProtocols][numMethods]prometheus.Counter
	errors   [numProtocols][numMethods]prometheus.Counter
	// jsonCodec counts the rest calls by the JSON codec they were served
	// with (jsoncodec.Names order).
	jsonCodec []prometheus.Counter
	handler   http.Handler
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: api.MetricRequests,
		Help: "Calls of the data routes/RPCs that reached their handler (after auth), whatever their outcome.",
	}, []string{"protocol", "method"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: api.MetricErrors,
		Help: "Those of " + api.MetricRequests + " that ended in an error (HTTP status >= 400 or a response cut short; gRPC code != OK).",
	}, []string{"protocol", "method"})
	for p := range numProtocols {
		for md := range numMethods {
			m.requests[p][md] = requests.WithLabelValues(string(protocolNames[p]), methodNames[md])
			m.errors[p][md] = errs.WithLabelValues(string(protocolNames[p]), methodNames[md])
		}
	}
	codecs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: api.MetricJSONCodec,
		Help: "Those of " + api.MetricRequests + " of protocol rest, by the JSON codec they were served with (header " + jsoncodec.Header + "; std without it).",
	}, []string{"codec"})
	for _, name := range jsoncodec.Names() {
		m.jsonCodec = append(m.jsonCodec, codecs.WithLabelValues(name))
	}
	cpu := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: api.MetricCPU,
		Help: "User plus system CPU time of the server process from getrusage(2), microsecond resolution, read at scrape time.",
	}, func() float64 { return rusage.CPU().Seconds() })
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: api.MetricBuildInfo,
		Help: "Always 1; the labels name the build that produced these figures.",
		ConstLabels: prometheus.Labels{
			"version":      buildinfo.Version(),
			"go_version":   buildinfo.GoVersion(),
			"goexperiment": buildinfo.GoExperiment(),
			"grpc_version": buildinfo.GRPCVersion(),
		},
	})
	build.Set(1)
	peak := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: api.MetricPeakRSS,
		Help: "Peak resident set of the server process since it started, from getrusage(2)'s maxrss, read at scrape time.",
	}, func() float64 { return float64(rusage.PeakRSS()) })
	m.reg.MustRegister(
		requests, errs, codecs, cpu, build, peak,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return m
}

// registerBudget exports the server-wide memory budget (membudget.go).
func (m *metrics) registerBudget(b *memBudget) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "meteorbench_memory_budget_limit_bytes",
			Help: "The server-wide budget for queued answers and request bodies being read (a quarter of --memory-limit).",
		}, func() float64 { return float64(b.limit) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "meteorbench_memory_budget_used_bytes",
			Help: "What the large calls in progress hold of the memory budget, read at scrape time.",
		}, func() float64 { return float64(b.used.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "meteorbench_memory_budget_refused_total",
			Help: "Large calls refused (503 / RESOURCE_EXHAUSTED) after waiting for the memory budget.",
		}, func() float64 { return float64(b.refused.Load()) }),
	)
}

// registerConns exports the connection gate (conngate.go), which Serve
// sets: zero before.
func (m *metrics) registerConns(s *Server) {
	gate := func(f func(g *connGate) int64) func() float64 {
		return func() float64 {
			if g := s.conns.Load(); g != nil {
				return float64(f(g))
			}
			return 0
		}
	}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "meteorbench_connections_limit",
			Help: "Most connections open at once, both protocols together (--max-conns).",
		}, func() float64 { return float64(s.cfg.MaxConns) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "meteorbench_connections_open",
			Help: "Connections open now, both protocols together.",
		}, gate(func(g *connGate) int64 { return g.open.Load() })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "meteorbench_connections_shed_total",
			Help: "New connections closed at once because --max-conns were open.",
		}, gate(func(g *connGate) int64 { return g.shed.Load() })),
	)
}
