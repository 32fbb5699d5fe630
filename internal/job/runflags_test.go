package job_test

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/flagvalue"
	"github.com/meteorbench/meteorbench/internal/job"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/target"
)

// runFlags are run's defaults against a target, given the named flags.
func runFlags(given ...string) job.RunFlags {
	return job.RunFlags{
		Target: flagvalue.Targets{T: target.One("127.0.0.1:1")}, ProtocolFlags: job.ProtocolFlags{Protocols: []string{"all"}}, Scenarios: []string{"all"},
		Batches: []int{100}, Concurrency: []int{1}, Links: []string{"none"}, Records: []int{1000},
		Duration: plan.DefaultDuration, Warmup: plan.DefaultWarmup, Timeout: plan.DefaultTimeout,
		Repeat: plan.DefaultRepeat, Formats: []string{"table"},
		Changed: func(name string) bool { return slices.Contains(given, name) },
	}
}

// Config applies the rules between run's flags; each refusal is one line
// naming them.
func TestRunFlagsConfig(t *testing.T) {
	config := func(f job.RunFlags) (plan.Config, error) {
		cfg, _, err := f.Config(context.Background(), io.Discard, io.Discard)
		return cfg, err
	}
	f := runFlags("iterations")
	f.Iterations, f.Warmup = 3, 0
	cfg, err := config(f)
	if err != nil || cfg.Repeat != 1 || cfg.Iterations != 3 || cfg.Duration != 0 || cfg.Warmup != -1 || cfg.Records != nil {
		t.Errorf("--iterations 3 --warmup 0: %+v, %v", cfg, err)
	}
	f = runFlags()
	f.Mix = "small=100,large=5"
	if cfg, err = config(f); err != nil || cfg.Scenarios != nil || cfg.Mix.Total() != 105 || len(cfg.Concurrency) != 1 || cfg.Concurrency[0] != plan.MixWorkers(cfg.Mix) {
		t.Errorf("--mix: %+v, %v", cfg, err)
	}
	for _, c := range []struct {
		given []string
		edit  func(*job.RunFlags)
		want  string
	}{
		{[]string{"rate"}, func(f *job.RunFlags) { f.Mix, f.Rate = "small=1", 5 }, "--mix gives each scenario its rate: drop --rate"},
		{[]string{"duration", "iterations"}, func(*job.RunFlags) {}, "--duration and --iterations are exclusive: give one"},
		{nil, func(f *job.RunFlags) { f.Protocols = nil }, "--proto: no value"},
		{nil, func(f *job.RunFlags) { f.Warmup = -time.Second }, "--warmup -1s: must not be negative"},
		{nil, func(f *job.RunFlags) { f.Capacity, f.Segment = true, "1/2" },
			"--segment and --start-at split a run between load generators: a capacity search cannot be split"},
	} {
		f := runFlags(c.given...)
		c.edit(&f)
		if _, err := config(f); err == nil || err.Error() != c.want {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}
