package report

// This file generates the result documents under testdata: synthetic but
// internally consistent runs (calls = calls/s x duration, MB/s = bytes per
// call x calls/s, time per batch = batch x mean latency, medians and
// intervals computed with internal/stats from the per-repeat figures).
// `go test -run TestFixtures -update` rewrites them; without -update the
// test checks the files still match the generator.

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"

	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/capacity"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/stats"
)

var update = flag.Bool("update", false, "rewrite testdata fixtures and golden files")

// protoModel is what a synthetic cell is drawn from.
type protoModel struct {
	p50         float64 // µs
	sigma       float64 // log-normal shape of the latency distribution
	sent, recv  float64 // bytes per call
	clientCPU   float64 // µs per call
	serverCPU   float64 // µs per call
	firstRecord float64 // µs, stream only
}

var models = map[api.Scenario]map[api.Protocol]protoModel{
	api.Small: {
		api.REST:         {p50: 95, sigma: 0.35, sent: 118, recv: 156, clientCPU: 38, serverCPU: 27},
		api.RESTProtobuf: {p50: 92, sigma: 0.35, sent: 150, recv: 140, clientCPU: 36, serverCPU: 25},
		api.GRPC:         {p50: 128, sigma: 0.30, sent: 62, recv: 48, clientCPU: 52, serverCPU: 41},
	},
	api.Large: {
		api.REST:         {p50: 4100, sigma: 0.25, sent: 120, recv: 219650, clientCPU: 2900, serverCPU: 2300},
		api.RESTProtobuf: {p50: 1750, sigma: 0.25, sent: 150, recv: 99960, clientCPU: 900, serverCPU: 780},
		api.GRPC:         {p50: 1380, sigma: 0.25, sent: 65, recv: 99900, clientCPU: 820, serverCPU: 690},
	},
	api.Stream: {
		api.REST:         {p50: 4500, sigma: 0.25, sent: 128, recv: 220390, clientCPU: 3300, serverCPU: 2600, firstRecord: 210},
		api.RESTProtobuf: {p50: 2400, sigma: 0.25, sent: 160, recv: 102990, clientCPU: 1500, serverCPU: 1400, firstRecord: 190},
		api.GRPC:         {p50: 2900, sigma: 0.25, sent: 70, recv: 107900, clientCPU: 1900, serverCPU: 1750, firstRecord: 260},
	},
	api.Post: {
		api.REST:         {p50: 5300, sigma: 0.25, sent: 219780, recv: 140, clientCPU: 2500, serverCPU: 3100},
		api.RESTProtobuf: {p50: 1900, sigma: 0.25, sent: 99990, recv: 128, clientCPU: 800, serverCPU: 950},
		api.GRPC:         {p50: 1600, sigma: 0.25, sent: 99930, recv: 55, clientCPU: 700, serverCPU: 880},
	},
}

// noise is a fixed table of standard-normal-like draws: fixtures must not
// depend on a random generator's algorithm.
var noise = []float64{0.12, -0.85, 1.31, -0.27, 0.64, -1.12, 0.38, 0.93, -0.51, 0.05, -1.48, 0.77, -0.09, 1.02, -0.66, 0.29}

func noiseAt(i int) float64 { return noise[((i%len(noise))+len(noise))%len(noise)] }

// round rounds v to a multiple of unit (a power of ten) and to the float64
// nearest that decimal, so the JSON shows 98.8 rather than 98.80000000000001.
func round(v, unit float64) float64 {
	dec := max(0, int(math.Round(-math.Log10(unit))))
	x, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', dec, 64), 64)
	return x
}

// quantile of a log-normal distribution with median p50.
func quantile(p50, sigma, q float64) float64 {
	return p50 * math.Exp(sigma*math.Sqrt2*math.Erfinv(2*q-1))
}

func latencyOf(p50, sigma float64) results.Latency {
	return results.Latency{
		P50:  round(p50, 0.1),
		P90:  round(quantile(p50, sigma, 0.9), 0.1),
		P99:  round(quantile(p50, sigma, 0.99), 0.1),
		P999: round(quantile(p50, sigma, 0.999), 0.1),
		Max:  round(quantile(p50, sigma, 0.99999), 0.1),
		Mean: round(p50*math.Exp(sigma*sigma/2), 0.1),
	}
}

// distribution follows HdrHistogram's percentile ticks: halving the
// distance to 100% every four points, then the maximum.
func distribution(p50, sigma float64) []results.Quantile {
	out := []results.Quantile{{Q: 0, US: round(quantile(p50, sigma, 1e-4), 0.1)}}
	for k := 1; k <= 48; k++ {
		q := 1 - math.Pow(0.5, float64(k)/4)
		out = append(out, results.Quantile{Q: round(q, 1e-9), US: round(quantile(p50, sigma, q), 0.1)})
	}
	return append(out, results.Quantile{Q: 1, US: round(quantile(p50, sigma, 0.99999), 0.1)})
}

// cellSpec is one synthetic cell to draw.
type cellSpec struct {
	proto       api.Protocol
	scenario    api.Scenario
	batch, conc int
	durationS   float64
	latFactor   float64 // multiplies the model's latencies
	cpuFactor   float64 // multiplies the model's CPU
	bytesFactor float64
	rate        float64 // open loop: requested calls/s
	records     int     // Condition.Records: 0 unless a --records sweep
	// adapterTimes: the protocol adapter reports the time to the last
	// byte and the client's decode time.
	adapterTimes bool
}

// drawCell makes one measured cell from the model.
func drawCell(s cellSpec) results.Cell {
	m := models[s.scenario][s.proto]
	p50 := m.p50 * s.latFactor
	lat := latencyOf(p50, m.sigma)
	c := results.Cell{
		CellKey: results.CellKey{Protocol: s.proto, Scenario: s.scenario, Batch: s.batch,
			Condition: results.Condition{Concurrency: s.conc, RateRequested: s.rate, Records: s.records}},
		Connections: s.conc, Mode: results.ModeClosed, DurationS: s.durationS,
		LatencyUS: lat, Distribution: distribution(p50, m.sigma),
	}
	if s.proto == api.GRPC {
		c.Connections = 1
	}
	callsPerS := float64(s.conc) * 1e6 / lat.Mean
	if s.rate > 0 {
		// Open loop: the rate, not the latency, sets the pace. Latency from
		// the intended start grows in the tail when calls queue.
		c.Mode = results.ModeOpen
		uncorrected := lat
		c.LatencyUncorrectedUS = &uncorrected
		c.LatencyUS = results.Latency{
			P50: round(lat.P50*1.04, 0.1), P90: round(lat.P90*1.2, 0.1), P99: round(lat.P99*1.9, 0.1),
			P999: round(lat.P999*3.5, 0.1), Max: round(lat.Max*4.2, 0.1), Mean: round(lat.Mean*1.15, 0.1),
		}
		c.Distribution = nil
		for _, q := range distribution(p50, m.sigma) {
			f := 1 + 3.2*math.Pow(q.Q, 12) // the correction grows towards the tail
			c.Distribution = append(c.Distribution, results.Quantile{Q: q.Q, US: round(q.US*f, 0.1)})
		}
		callsPerS = s.rate * (1 - 0.0015)
		c.LateCalls = int64(math.Round(callsPerS * s.durationS * 0.004))
	}
	if s.adapterTimes {
		// Decoding is most of the JSON payloads' latency, little of protobuf's.
		share := 0.15
		if s.proto == api.REST && s.scenario != api.Small {
			share = 0.55
		}
		lb := latencyOf(p50*(1-share), m.sigma)
		dec := latencyOf(p50*share, m.sigma*0.5)
		c.LastByteUS, c.DecodeUS = &lb, &dec
	}
	c.Calls = int64(math.Round(callsPerS * s.durationS))
	c.CallsPerS = round(float64(c.Calls)/s.durationS, 0.01)
	if s.rate > 0 {
		c.RateAchieved = c.CallsPerS
	}
	c.BytesPerCall = results.Bytes{Sent: round(m.sent*s.bytesFactor, 0.1), Received: round(m.recv*s.bytesFactor, 0.1)}
	c.MBPerS = round((c.BytesPerCall.Sent+c.BytesPerCall.Received)*c.CallsPerS/1e6, 0.001)
	if s.rate == 0 { // open-loop cells have no time per batch
		c.Batches = c.Calls / int64(s.batch)
		sd := c.LatencyUS.Mean * math.Sqrt(math.Exp(m.sigma*m.sigma)-1)
		c.BatchMS = results.Spread{
			Mean:   round(float64(s.batch)*c.LatencyUS.Mean/1e3, 0.001),
			Stddev: round(math.Sqrt(float64(s.batch))*sd/1e3, 0.001),
		}
	}
	c.ClientCPUUSPerCall = round(m.clientCPU*s.cpuFactor, 0.1)
	server := round(m.serverCPU*s.cpuFactor, 0.1)
	c.ServerCPUUSPerCall = &server
	if m.firstRecord > 0 {
		fr := latencyOf(m.firstRecord*s.latFactor, m.sigma)
		c.FirstRecordUS = &fr
	}
	return c
}

// drawRepeated measures a cell k times with noise and aggregates it the way
// the load generator documents: medians, intervals, totals.
func drawRepeated(s cellSpec, k, seed int) results.Cell {
	var reps []results.Cell
	for i := 0; i < k; i++ {
		r := s
		r.latFactor *= 1 + 0.03*noiseAt(seed+i)
		r.cpuFactor *= 1 + 0.02*noiseAt(seed+i+5)
		r.bytesFactor *= 1 + 0.0004*noiseAt(seed+i+9)
		reps = append(reps, drawCell(r))
	}
	// The aggregate's shape is the median repeat's.
	byP50 := append([]results.Cell(nil), reps...)
	sort.SliceStable(byP50, func(i, j int) bool { return byP50[i].LatencyUS.P50 < byP50[j].LatencyUS.P50 })
	c := byP50[len(byP50)/2]
	c.Calls, c.DurationS, c.Batches, c.LateCalls = 0, 0, 0, 0
	c.CI = map[results.Figure]results.Interval{}
	for i := range reps {
		c.Calls += reps[i].Calls
		c.Errors += reps[i].Errors
		c.DurationS += reps[i].DurationS
		c.Batches += reps[i].Batches
		c.LateCalls += reps[i].LateCalls
		c.Repeats = append(c.Repeats, reps[i].Sample())
	}
	med := func(name results.Figure) float64 {
		iv := stats.Summarize(c.RepeatValues(name))
		c.CI[name] = iv
		return iv.Median
	}
	c.CallsPerS = med("calls_per_s")
	c.LatencyUS.P50 = med("latency_us_p50")
	c.LatencyUS.P90 = med("latency_us_p90")
	c.LatencyUS.P99 = med("latency_us_p99")
	c.LatencyUS.P999 = med(results.FigLatencyP999)
	if s.rate == 0 {
		c.BatchMS.Mean = med("batch_ms_mean")
	}
	c.BytesPerCall.Sent = med("bytes_sent_per_call")
	c.BytesPerCall.Received = med("bytes_received_per_call")
	c.ClientCPUUSPerCall = med("client_cpu_us_per_call")
	server := med("server_cpu_us_per_call")
	c.ServerCPUUSPerCall = &server
	if s.adapterTimes {
		lb, dec := *c.LastByteUS, *c.DecodeUS
		lb.P50, dec.Mean = med(results.FigLastByteP50), med(results.FigDecodeMean)
		c.LastByteUS, c.DecodeUS = &lb, &dec
	}
	c.MBPerS = round((c.BytesPerCall.Sent+c.BytesPerCall.Received)*c.CallsPerS/1e6, 0.001)
	return c
}

var fixtureStart = time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC)

func fixtureEnv(flags ...string) results.Env {
	return results.Env{
		MeteorbenchVersion: "v0.0.0-fixture", GoVersion: "go1.26.8", GRPCVersion: "v1.85.0", ProtobufVersion: "v1.36.12",
		GOMAXPROCS: 2, NumCPU: 2, CPUModel: "Synthetic CPU @ 2.00GHz (fixture data)", OS: "linux 6.1.0", Arch: "amd64",
		Target: "127.0.0.1:41234", OwnServer: true, Flags: append([]string{"meteorbench", "run"}, flags...),
	}
}

func newResult(env results.Env, set results.Settings) *results.Result {
	return &results.Result{Schema: results.Schema, Env: env, Settings: set, Started: fixtureStart, Stop: results.Stop{Reason: results.StopCompleted}}
}

// finish sets Finished from the cells' measured time plus warm-ups, and
// the verdicts as the run command computes them.
func finish(r *results.Result) {
	defer analysis.Apply(r)
	total := 0.0
	for i := range r.Cells {
		total += r.Cells[i].DurationS + r.Settings.WarmupS*float64(max(r.Settings.Repeat, 1))
	}
	r.Finished = r.Started.Add(time.Duration(math.Round(total)) * time.Second)
}

func closedSettings(protos []api.Protocol, scenarios []api.Scenario, batches []int, repeat int) results.Settings {
	return results.Settings{
		Protocols: protos, Scenarios: scenarios, Batches: batches, Concurrency: []int{4},
		DurationS: 10, WarmupS: 1, TimeoutS: 5, Mode: results.ModeClosed, Repeat: repeat,
	}
}

var allScenarios = []api.Scenario{api.Small, api.Large, api.Stream, api.Post}

// fixtureBasic: two protocols, four scenarios, batches 100 and 200, one
// measurement each.
func fixtureBasic() *results.Result {
	protos := []api.Protocol{api.REST, api.GRPC}
	r := newResult(fixtureEnv("--protocols", "rest,grpc", "--batch", "100,200", "--concurrency", "4", "--duration", "10s"),
		closedSettings(protos, allScenarios, []int{100, 200}, 1))
	for _, sc := range allScenarios {
		for bi, b := range []int{100, 200} {
			for pi, p := range protos {
				n := noiseAt(bi*3 + pi)
				r.Cells = append(r.Cells, drawCell(cellSpec{proto: p, scenario: sc, batch: b, conc: 4, durationS: 10,
					latFactor: 1 + 0.02*n, cpuFactor: 1 - 0.01*n, bytesFactor: 1, adapterTimes: true}))
			}
		}
	}
	finish(r)
	return r
}

// fixtureRepeats: three protocols, four scenarios, batches 100 and 200,
// every cell measured three times (interleaved).
func fixtureRepeats() *results.Result {
	protos := []api.Protocol{api.REST, api.RESTProtobuf, api.GRPC}
	r := newResult(fixtureEnv("--repeat", "3", "--duration", "5s"), closedSettings(protos, allScenarios, []int{100, 200}, 3))
	r.Settings.DurationS = 5
	seed := 0
	for _, sc := range allScenarios {
		for _, b := range []int{100, 200} {
			for _, p := range protos {
				r.Cells = append(r.Cells, drawRepeated(cellSpec{proto: p, scenario: sc, batch: b, conc: 4, durationS: 5,
					latFactor: 1, cpuFactor: 1, bytesFactor: 1, adapterTimes: true}, 3, seed))
				seed += 3
			}
		}
	}
	finish(r)
	return r
}

// fixtureInterrupted: stopped by Ctrl-C in the eighth cell, with errors,
// a cell whose server CPU is unknown and warnings.
func fixtureInterrupted() *results.Result {
	protos := []api.Protocol{api.REST, api.GRPC}
	scen := []api.Scenario{api.Small, api.Large}
	r := newResult(fixtureEnv("--scenarios", "small,large", "--timeout", "2ms"), closedSettings(protos, scen, []int{100, 200}, 1))
	r.Settings.TimeoutS = 0.002
	r.Stop = results.Stop{Reason: results.StopInterrupted}
	r.Interrupted = true
	r.Warnings = []string{"interrupted during cell 8 of 8: large/grpc/b200/c4 was not measured"}
	for _, sc := range scen {
		for _, b := range []int{100, 200} {
			for _, p := range protos {
				if sc == api.Large && b == 200 && p == api.GRPC {
					continue
				}
				s := cellSpec{proto: p, scenario: sc, batch: b, conc: 4, durationS: 10, latFactor: 1, cpuFactor: 1, bytesFactor: 1}
				if sc == api.Large && b == 200 {
					s.durationS = 1.5 // cut short
				}
				c := drawCell(s)
				switch {
				case sc == api.Large && b == 100 && p == api.REST:
					c.ErrorClasses = results.ErrorCounts{"deadline_exceeded": 37, "http_503": 2}
					c.ErrorExamples = map[results.ErrorClass]string{
						"deadline_exceeded": `Get "http://127.0.0.1:41234/api/MeteoriteLandings/LargePayload": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
						"http_503":          "503 Service Unavailable: server overloaded",
					}
					c.Errors = 39
					c.Warnings = []string{"39 calls failed (0.4%): latency percentiles cover successful calls only"}
				case sc == api.Large && b == 100 && p == api.GRPC:
					c.ServerCPUUSPerCall = nil
					c.Warnings = []string{"server CPU unknown: GET /metrics failed after the cell"}
				case sc == api.Large && b == 200:
					c.StopReason = results.StopInterrupted
					c.Warnings = []string{"cut short by the interrupt: 1.5s measured of 10s"}
				case sc == api.Small && b == 200 && p == api.GRPC:
					c.Errors = 1000
					c.ErrorClasses = results.ErrorCounts{"invalid-response": 1000}
					c.ErrorExamples = map[results.ErrorClass]string{"invalid-response": "record 3: id 7 does not match the data set:\n" +
						`want {"name":"Aarhus","id":"7","mass":"720"}, got {"name":"Aarhus","id":"7","mass":"0"} (field mass)`}
				}
				r.Cells = append(r.Cells, c)
			}
		}
	}
	finish(r)
	r.Finished = r.Finished.Add(-8500 * time.Millisecond)
	return r
}

// fixtureOpenLoop: open loop at 200 calls/s, latency corrected for
// coordinated omission, with the uncorrected figures beside it.
func fixtureOpenLoop() *results.Result {
	protos := []api.Protocol{api.REST, api.GRPC}
	scen := []api.Scenario{api.Small, api.Large}
	set := closedSettings(protos, scen, []int{100}, 1)
	set.Mode, set.Rate, set.Concurrency = results.ModeOpen, 200, []int{8}
	r := newResult(fixtureEnv("--rate", "200", "--concurrency", "8", "--batch", "100"), set)
	for _, sc := range scen {
		for _, p := range protos {
			r.Cells = append(r.Cells, drawCell(cellSpec{proto: p, scenario: sc, batch: 100, conc: 8, durationS: 10,
				latFactor: 1, cpuFactor: 1, bytesFactor: 1, rate: 200}))
		}
	}
	finish(r)
	return r
}

// fixtureRecords: a --records sweep of large and post (small measured
// once), three protocols. A call's latency is the small call's (the fixed
// cost) plus a per-record cost fitted to the 1000-record model, so REST wins
// on tiny payloads and gRPC from about 10 records; bytes scale with the
// records (headers included: synthetic).
func fixtureRecords() *results.Result {
	protos := []api.Protocol{api.REST, api.RESTProtobuf, api.GRPC}
	scen := []api.Scenario{api.Small, api.Large, api.Post}
	sizes := []int{1, 10, 100, 1000, 10000}
	set := closedSettings(protos, scen, []int{100}, 1)
	set.Concurrency, set.DurationS, set.WarmupS, set.Records = []int{1}, 2, 0.5, sizes
	r := newResult(fixtureEnv("--scenario", "small,large,post", "--records", "1,10,100,1000,10000", "--duration", "2s", "--warmup", "500ms"), set)
	i := 0
	for _, sc := range scen {
		ns := sizes
		if sc == api.Small {
			ns = []int{0}
		}
		for _, n := range ns {
			for _, p := range protos {
				lat, bytes := 1.0, 1.0
				if n > 0 {
					m := models[sc][p]
					fixed := models[api.Small][p].p50
					lat = (fixed + (m.p50-fixed)*float64(n)/1000) / m.p50
					bytes = float64(n) / 1000
				}
				r.Cells = append(r.Cells, drawCell(cellSpec{proto: p, scenario: sc, batch: 100, conc: 1, durationS: 2,
					latFactor: lat * (1 + 0.02*noiseAt(i)), cpuFactor: lat, bytesFactor: bytes, records: n, adapterTimes: true}))
				i++
			}
		}
	}
	finish(r)
	return r
}

// compareSpec draws the two sides of the compare fixtures: five repeats
// each; "new" has a gRPC large-payload path 30% faster and 25% cheaper,
// everything else drawn from the same model with different noise.
func fixtureCompare(newer bool) *results.Result {
	protos := []api.Protocol{api.REST, api.GRPC}
	scen := []api.Scenario{api.Small, api.Large, api.Post}
	env := fixtureEnv("--repeat", "5", "--batch", "100")
	if newer {
		scen = []api.Scenario{api.Small, api.Large, api.Stream}
		env.GoVersion, env.GOMAXPROCS, env.NumCPU = "go1.27.0", 4, 4
		env.CPUModel = "Other synthetic CPU @ 3.10GHz (fixture data)"
		env.Target = "127.0.0.1:39877" // its own server's random port: no setting
	}
	r := newResult(env, closedSettings(protos, scen, []int{100}, 5))
	r.Settings.DurationS = 5
	seed := 0
	if newer {
		seed = 7
	}
	for _, sc := range scen {
		for _, p := range protos {
			s := cellSpec{proto: p, scenario: sc, batch: 100, conc: 4, durationS: 5, latFactor: 1, cpuFactor: 1, bytesFactor: 1, adapterTimes: true}
			if newer && sc == api.Large && p == api.GRPC {
				s.latFactor, s.cpuFactor = 0.7, 0.75
			}
			r.Cells = append(r.Cells, drawRepeated(s, 5, seed))
			seed += 5
		}
	}
	finish(r)
	if newer {
		r.Started = r.Started.Add(24 * time.Hour)
		r.Finished = r.Finished.Add(24 * time.Hour)
	}
	return r
}

// capModel is a synthetic server for the capacity fixture: capacity c
// calls/s, service time s µs; p50 and p99 grow as in an M/M/1 queue up to
// c, and past it the backlog grows (latency of the probe's length). The
// generator cannot offer more than genMax (0: no limit). The capacity
// varies 3% between short probes and 0.5% between the long ones of the
// confirmation and re-checks (their noise averages over 5 s).
type capModel struct{ c, s, genMax float64 }

func (m capModel) probe(rate float64, i int, phase capacity.Phase) capacity.Outcome {
	spread := 0.03
	if phase == capacity.Confirm || phase == capacity.Boundary {
		spread = 0.005
	}
	n := 1 + spread*noiseAt(i)
	o := capacity.Outcome{Offered: rate, Achieved: round(rate*(1+0.002*noiseAt(i+1)), 0.01), Duration: 2 * time.Second}
	rho := rate / (m.c * n)
	switch {
	case rho < 1:
		o.P50 = round(m.s*math.Ln2/(1-rho), 0.1)
		o.Latency = round(m.s*math.Log(100)/(1-rho), 0.1)
	default:
		o.P50, o.Latency = round(2e5*rho, 0.1), round(9e5*rho, 0.1)
		o.Achieved = round(m.c*n, 0.01)
	}
	o.Calls = int64(math.Round(o.Achieved * 2))
	if m.genMax > 0 && rate > m.genMax {
		o.Void, o.VoidWhy = true, fmt.Sprintf("%d of %d calls started late with a worker free: the load generator woke late", o.Calls/5, o.Calls)
		o.Achieved = round(m.genMax, 0.01)
	}
	return o
}

// fixtureCapacity: a capacity document, searched by the real search
// (package capacity) against synthetic servers: small with both
// protocols on an unpinned server (REST about 9,800 calls/s, gRPC 7,300),
// and on one server CPU, where the generator cannot offer gRPC more than
// 3,000 calls/s: that series ends generator-bound.
func fixtureCapacity() *results.Result {
	protos := []api.Protocol{api.REST, api.GRPC}
	set := closedSettings(protos, []api.Scenario{api.Small}, []int{1}, 1)
	set.Mode, set.Concurrency, set.DurationS, set.WarmupS = results.ModeOpen, nil, 2, 0.5
	env := fixtureEnv("--slo", "p99=50ms", "--server-cpus", "0,1")
	env.Flags[1] = "capacity"
	r := newResult(env, set)
	r.Cells = []results.Cell{}
	obj := capacity.Objective{Percentile: 99, Bound: 50 * time.Millisecond, MaxErrors: 0.001}
	type series struct {
		cond  results.Condition
		proto api.Protocol
		m     capModel
	}
	all := []series{
		{results.Condition{}, api.REST, capModel{c: 10000, s: 200}},
		{results.Condition{}, api.GRPC, capModel{c: 7450, s: 260}},
		{results.Condition{ServerCPUs: 1}, api.REST, capModel{c: 5200, s: 380}},
		{results.Condition{ServerCPUs: 1}, api.GRPC, capModel{c: 3900, s: 500, genMax: 3000}},
	}
	total := 0.0
	for si, sr := range all {
		s := capacity.NewSearcher(obj, capacity.Settings{Start: 100, Precision: 0.05})
		for i := 0; !s.Done(); i++ {
			rate, phase := s.Next()
			s.Record(sr.m.probe(rate, 7*si+i, phase))
		}
		res := s.Result()
		plan := &capacity.Plan{Objective: obj}
		c := plan.Capacity(results.CellKey{Scenario: api.Small, Protocol: sr.proto, Condition: sr.cond}, []capacity.Result{res}, 1)
		total += 2.8 * float64(len(c.Probes))
		r.Capacity = append(r.Capacity, c)
	}
	r.Finished = r.Started.Add(time.Duration(math.Round(total)) * time.Second)
	analysis.Apply(r)
	return r
}

// fixtureCapacityRepeat: a capacity document of three searches per
// series (--repeat 3), searched by the real search and aggregated by the
// real plan: small unpinned, where the ranges do not overlap, and on one
// server CPU, where they do; one gRPC probe there met a stalled target
// and was repeated.
func fixtureCapacityRepeat() *results.Result {
	protos := []api.Protocol{api.REST, api.GRPC}
	set := closedSettings(protos, []api.Scenario{api.Small}, []int{1}, 1)
	set.Mode, set.Concurrency, set.DurationS, set.WarmupS = results.ModeOpen, nil, 2, 0.5
	set.Repeat = 3
	env := fixtureEnv("--slo", "p99=50ms", "--server-cpus", "0,1", "--repeat", "3")
	env.Flags[1] = "capacity"
	r := newResult(env, set)
	r.Cells = []results.Cell{}
	obj := capacity.Objective{Percentile: 99, Bound: 50 * time.Millisecond, MaxErrors: 0.001}
	plan := &capacity.Plan{Objective: obj}
	all := []struct {
		cond  results.Condition
		proto api.Protocol
		caps  []float64 // per search
		s     float64
	}{
		{results.Condition{}, api.REST, []float64{10000, 9500, 10400}, 200},
		{results.Condition{}, api.GRPC, []float64{7600, 7700, 7350}, 260},
		{results.Condition{ServerCPUs: 1}, api.REST, []float64{5200, 4900, 5400}, 380},
		{results.Condition{ServerCPUs: 1}, api.GRPC, []float64{5000, 5300, 4800}, 500},
	}
	total := 0.0
	for si, sr := range all {
		var rs []capacity.Result
		for k, c := range sr.caps {
			m := capModel{c: c, s: sr.s}
			s := capacity.NewSearcher(obj, capacity.Settings{Start: 100, Precision: 0.05})
			for i := 0; !s.Done(); i++ {
				rate, phase := s.Next()
				o := m.probe(rate, 11*si+5*k+i, phase)
				if si == 3 && k == 1 && i == 3 {
					o.Stalled, o.StallWhy = true, "4 calls still running at the probe's hard end (abandoned)"
				}
				s.Record(o)
			}
			rs = append(rs, s.Result())
		}
		c := plan.Capacity(results.CellKey{Scenario: api.Small, Protocol: sr.proto, Condition: sr.cond}, rs, len(sr.caps))
		for _, s := range c.Searches {
			total += 2.8 * float64(len(s.Probes))
		}
		r.Capacity = append(r.Capacity, c)
	}
	r.Finished = r.Started.Add(time.Duration(math.Round(total)) * time.Second)
	analysis.Apply(r)
	return r
}

var fixtures = map[string]func() *results.Result{
	"capacity":        fixtureCapacity,
	"capacity-repeat": fixtureCapacityRepeat,
	"fit":             fixtureFit, // fitfixture_test.go
	"mix":             fixtureMix, // fitfixture_test.go
	"basic":           fixtureBasic,
	"repeats":         fixtureRepeats,
	"interrupted":     fixtureInterrupted,
	"openloop":        fixtureOpenLoop,
	"records":         fixtureRecords,
	"compare-old":     func() *results.Result { return fixtureCompare(false) },
	"compare-new":     func() *results.Result { return fixtureCompare(true) },
}

func fixtureNames() []string {
	var names []string
	for n := range fixtures {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func fixturePath(name string) string { return filepath.Join("testdata", name+".json") }

// TestFixtures regenerates (-update) or checks the testdata documents.
func TestFixtures(t *testing.T) {
	for _, name := range fixtureNames() {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := results.Write(&buf, fixtures[name]()); err != nil {
				t.Fatal(err)
			}
			path := fixturePath(name)
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestFixtures -update)", err)
			}
			if !bytes.Equal(got, buf.Bytes()) {
				t.Errorf("%s differs from its generator; run go test -run TestFixtures -update", path)
			}
		})
	}
}

// loadFixture reads a testdata document through results.ReadFile.
func loadFixture(t testing.TB, name string) *results.Result {
	t.Helper()
	r, err := results.ReadFile(fixturePath(name))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFixturesConsistent checks the invariants reporters rely on in every
// fixture, as read back from disk.
func TestFixturesConsistent(t *testing.T) {
	near := func(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b)) }
	for _, name := range fixtureNames() {
		r := loadFixture(t, name)
		if len(r.Cells) == 0 && len(r.Capacity) == 0 {
			t.Fatalf("%s: no cells", name)
		}
		keys := map[string]bool{}
		for i := range r.Cells {
			c := &r.Cells[i]
			where := fmt.Sprintf("%s: %s", name, c.Key())
			if keys[c.Key()] {
				t.Errorf("%s: duplicate key", where)
			}
			keys[c.Key()] = true
			tol := 0.01
			if len(c.Repeats) > 1 {
				tol = 0.05 // calls/s is the median repeat's, calls the total
			}
			if !near(float64(c.Calls), c.CallsPerS*c.DurationS, tol) {
				t.Errorf("%s: calls %d != calls/s %v x %vs", where, c.Calls, c.CallsPerS, c.DurationS)
			}
			if mb := (c.BytesPerCall.Sent + c.BytesPerCall.Received) * c.CallsPerS / 1e6; !near(mb, c.MBPerS, 0.01) {
				t.Errorf("%s: MB/s %v, bytes say %v", where, c.MBPerS, mb)
			}
			l := c.LatencyUS
			if !(0 < l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
				t.Errorf("%s: percentiles out of order: %+v", where, l)
			}
			for j := 1; j < len(c.Distribution); j++ {
				if c.Distribution[j].Q <= c.Distribution[j-1].Q || c.Distribution[j].US < c.Distribution[j-1].US {
					t.Errorf("%s: distribution not increasing at %d", where, j)
					break
				}
			}
			if c.Mode == results.ModeOpen && (c.Batches != 0 || c.BatchMS.Mean != 0) {
				t.Errorf("%s: open-loop cell with a time per batch", where)
			}
			if c.Mode == results.ModeClosed && !near(c.BatchMS.Mean, float64(c.Batch)*l.Mean/1e3, 0.05) {
				t.Errorf("%s: batch mean %v ms, batch x mean latency %v ms", where, c.BatchMS.Mean, float64(c.Batch)*l.Mean/1e3)
			}
			var errs int64
			for _, n := range c.ErrorClasses {
				errs += n
			}
			if len(c.ErrorClasses) > 0 && errs != c.Errors {
				t.Errorf("%s: error classes sum to %d, errors %d", where, errs, c.Errors)
			}
			if r.Settings.Repeat > 1 {
				if len(c.Repeats) != r.Settings.Repeat {
					t.Errorf("%s: %d repeats, settings say %d", where, len(c.Repeats), r.Settings.Repeat)
				}
				for fig, iv := range c.CI {
					if v, _ := c.Figure(fig); v != iv.Median || iv.Lo > iv.Median || iv.Hi < iv.Median {
						t.Errorf("%s: %s = %v, CI %+v", where, fig, v, iv)
					}
				}
			}
		}
	}
}
