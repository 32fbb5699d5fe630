package fit_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/fit"
	"github.com/meteorbench/meteorbench/internal/loadgen"
	"github.com/meteorbench/meteorbench/internal/loadgen/loadgentest"
	"github.com/meteorbench/meteorbench/internal/results"
)

// A server of known cost: every data call takes 2 ms of its one CPU (the
// test server's virtual-time slot, which its /metrics count as CPU), so it
// saturates at 500 calls/s whatever the mix. fit measures the traffic's
// cost at its rates, predicts the scale at which a 1cpu tier saturates,
// and fit --verify's probes must find that saturation within 20%.
//
// Timing-dependent (a loaded machine delays the load generator): up to
// three attempts, every attempt's figures logged. When every failed
// attempt failed because the load generator could not deliver the rate
// (verify says generator-bound), the machine, not the model, is what was
// measured: the test is skipped, saying so.
func TestVerifyPredictsAKnownCapacity(t *testing.T) {
	if testing.Short() {
		t.Skip("three probes per protocol")
	}
	srv := loadgentest.Start(t, loadgentest.Config{Slots: 1, ServiceTime: 2 * time.Millisecond})
	capacity := 500.0
	traffic, _ := results.ParseMix("small=100,large=2")
	tier, _ := fit.ParseTier("1cpu")
	p := fit.Plan{Tier: tier, Traffic: traffic, Headroom: 0.7}
	base := loadgen.Config{Target: srv.Addr, Protocols: []api.Protocol{api.REST, api.GRPC}, Duration: time.Second, Warmup: 200 * time.Millisecond}
	ctx := context.Background()
	s, err := loadgen.Open(ctx, p.Config(base, traffic, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	prober := fit.SessionProber(s, p, base, 0)

	var failures []string
	generatorOnly := true
	for attempt := 1; attempt <= 3; attempt++ {
		failures = failures[:0]
		for _, pr := range base.Protocols {
			c, err := prober(ctx, pr, traffic)
			if err != nil {
				t.Fatal(err)
			}
			costs, _, err := fit.FromCells([]results.Cell{*c}, traffic)
			if err != nil {
				t.Fatal(err)
			}
			_, fits := fit.Answer(p, costs, "measured", nil)
			f := &fits[0]
			if err := fit.Verify(ctx, p, f, prober); err != nil {
				t.Fatal(err)
			}
			predicted := f.MaxScale * traffic.Total()
			t.Logf("attempt %d, %s: %.3f cores at %v calls/s; predicted saturation %.0f calls/s (known %.0f)", attempt, pr, f.CPUCores, traffic.Total(), predicted, capacity)
			for _, pb := range f.Probes {
				t.Logf("   probe %.2fx: offered %.0f, achieved %.0f calls/s, saturated %v, errors %d, generator %q", pb.Scale, pb.Offered, pb.Achieved, pb.Saturated, pb.Errors, pb.GeneratorBound)
			}
			switch {
			case math.Abs(predicted-capacity)/capacity > 0.05:
				failures = append(failures, string(pr)+": the model's prediction is not the known capacity")
				generatorOnly = false
			case f.MeasuredMax == nil:
				failures = append(failures, string(pr)+": verify measured no saturation ("+f.GeneratorBound+")")
				generatorOnly = generatorOnly && f.GeneratorBound != ""
			case math.Abs(*f.PredictionError) > fit.MaxPredictionError:
				failures = append(failures, string(pr)+": prediction off by more than 20%")
				generatorOnly = false
			default:
				t.Logf("   measured saturation %.0f calls/s: prediction error %+.1f%%", *f.MeasuredMax*traffic.Total(), 100**f.PredictionError)
			}
		}
		if len(failures) == 0 {
			return
		}
	}
	if generatorOnly {
		t.Skipf("the load generator could not deliver the probes' rates in three attempts (a loaded machine); the last: %v", failures)
	}
	t.Fatalf("three attempts failed; the last: %v", failures)
}
