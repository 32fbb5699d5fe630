package engine

import (
	"math"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// MaxWorkersLatency is the latency the default bound on an open-loop
// cell's workers (Config.MaxWorkers, run --max-workers) leaves room for:
// at --rate R, R × 10 s workers can each wait 10 s for an answer before a
// call has to start late.
const MaxWorkersLatency = 10 * time.Second

// DefaultMaxWorkers is the default bound on the workers of an open-loop
// cell at rate calls/s: enough for MaxWorkersLatency of latency.
func DefaultMaxWorkers(rate float64) int {
	return max(1, int(math.Ceil(rate*MaxWorkersLatency.Seconds())))
}

// MaxWorkersFor is run's Config.MaxWorkers: with a rate and no
// concurrency given, flag, or DefaultMaxWorkers when flag is 0; else 0
// (the workers are the concurrency). A flag given without a rate is left
// for Validate to refuse.
func MaxWorkersFor(rate float64, concurrencyGiven bool, flag int) int {
	switch {
	case flag != 0:
		return flag
	case rate > 0 && !concurrencyGiven:
		return DefaultMaxWorkers(rate)
	}
	return 0
}

// callers are a cell's Callers, kept from the warm-up to the measurement:
// list[w][i] is worker w's Caller of part i (one part, the cell's
// scenario, or each of a mix's scenarios). In an open loop that sizes
// itself (Config.MaxWorkers) the dispatcher adds a worker, with its
// Callers, whenever a call is due and every worker is busy, up to max: the
// call starts on time instead of waiting for a worker (vegeta's and k6's
// maxVUs).
type Callers struct {
	List      [][]call.Caller
	max       int // 0: the list is all there is
	client    call.Client
	scenarios []api.Scenario // by part
}

// NewCallers are the Callers of client's scenarios (one part each), with
// no worker yet (Add makes each), growing up to max workers in an open
// loop that sizes itself (0: no growth).
func NewCallers(client call.Client, scenarios []api.Scenario, max int) *Callers {
	return &Callers{client: client, scenarios: scenarios, max: max}
}

// SingleCallers are callers of one part, one per worker, that cannot grow.
func SingleCallers(list ...call.Caller) *Callers {
	cs := &Callers{List: make([][]call.Caller, len(list))}
	for i, c := range list {
		cs.List[i] = []call.Caller{c}
	}
	return cs
}

// add makes one more worker's Callers.
func (c *Callers) Add() ([]call.Caller, error) {
	w := make([]call.Caller, len(c.scenarios))
	for i, sc := range c.scenarios {
		a, err := c.client.Caller(sc)
		if err != nil {
			return nil, err
		}
		w[i] = a
	}
	c.List = append(c.List, w)
	return w, nil
}

// grow adds a worker's Callers; false at the bound or when the client
// cannot make one (the call then waits for a busy worker, as without
// growth).
func (c *Callers) grow() ([]call.Caller, bool) {
	if len(c.List) >= c.max {
		return nil, false
	}
	w, err := c.Add()
	if err != nil {
		return nil, false
	}
	return w, true
}

// GrowBusy and GrowWindow: an open loop that sizes itself adds a worker
// only while the load generator's own CPU time, over the last GrowWindow,
// was under GrowBusy of its cores (GOMAXPROCS: pinned, its share). A
// generator short of CPU starts calls late because it runs them late, not
// for want of workers, and a worker more (a connection more to dial, a
// goroutine more to run) only makes it later: on this 2-core machine a run
// at 10,000 calls/s that fell behind grew to 15,500 workers, spent half
// its CPU dialling them and measured 4,600 calls/s. Its calls now start
// late instead, and the cell says so (late calls, the generator's CPU).
const (
	GrowBusy   = 0.9
	GrowWindow = 50 * time.Millisecond
)

// growGate says whether the generator has the CPU for another worker.
type growGate struct {
	cores float64
	used  func() time.Duration // the process's CPU time so far
	at    time.Time
	cpu   time.Duration
	open  bool
}

func newGrowGate(now time.Time, cores int, used func() time.Duration) *growGate {
	return &growGate{cores: float64(cores), used: used, at: now, cpu: used(), open: true}
}

// allows reports whether a worker may be added at now: the verdict of the
// last full window.
func (g *growGate) allows(now time.Time) bool {
	if wall := now.Sub(g.at); wall >= GrowWindow {
		cpu := g.used()
		g.open = float64(cpu-g.cpu) < GrowBusy*g.cores*float64(wall)
		g.at, g.cpu = now, cpu
	}
	return g.open
}
