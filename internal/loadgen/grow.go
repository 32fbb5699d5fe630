package loadgen

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

// callers are a cell's callers, one per worker, kept from the warm-up to
// the measurement. In an open loop that sizes itself (Config.MaxWorkers)
// the dispatcher adds one, with its worker, whenever a call is due and
// every worker is busy, up to max: the call starts on time instead of
// waiting for a worker (vegeta's and k6's maxVUs).
type callers struct {
	list   []call.Caller
	max    int // 0: the list is all there is
	client call.Client
	sc     api.Scenario
}

// grow adds a caller; false at the bound or when the client cannot make
// one (the call then waits for a busy worker, as without growth).
func (c *callers) grow() (call.Caller, bool) {
	if len(c.list) >= c.max {
		return nil, false
	}
	a, err := c.client.Caller(c.sc)
	if err != nil {
		return nil, false
	}
	c.list = append(c.list, a)
	return a, true
}
