package capacity

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Prober measures one probe at an offered rate for the series at index i.
type Prober func(ctx context.Context, series int, rate float64) (Outcome, error)

// Run drives one searcher per series, interleaving their probes step by
// step, until all are done, ctx ends, or maxTime passes (then every
// unfinished search is stopped and reports its best bracket). A Prober
// error ends the run with the results so far.
func Run(ctx context.Context, searchers []*Searcher, maxTime time.Duration, pause time.Duration, probe Prober) error {
	var deadline time.Time
	if maxTime > 0 {
		deadline = time.Now().Add(maxTime)
	}
	return runUntil(ctx, searchers, deadline, fmt.Sprintf("stopped by --max-time %v: best bracket so far", maxTime), pause, probe)
}

// runUntil is Run with a deadline (zero: none); stopped by it, every
// unfinished search says stopped.
func runUntil(ctx context.Context, searchers []*Searcher, deadline time.Time, stopped string, pause time.Duration, probe Prober) error {
	for {
		active := 0
		for i, s := range searchers {
			if s.Done() {
				continue
			}
			if !deadline.IsZero() && time.Now().After(deadline) {
				s.Stop(stopped)
				continue
			}
			active++
			rate, _ := s.Next()
			o, err := probe(ctx, i, rate)
			if err != nil {
				stopAll(searchers, "stopped: "+err.Error())
				return err
			}
			s.Record(o)
			if pause > 0 {
				select {
				case <-time.After(pause):
				case <-ctx.Done():
				}
			}
			if ctx.Err() != nil {
				stopAll(searchers, "interrupted")
				return ctx.Err()
			}
		}
		if active == 0 {
			return nil
		}
	}
}

func stopAll(ss []*Searcher, why string) {
	for _, s := range ss {
		s.Stop(why)
	}
}

// ErrNoSeries is returned by callers with nothing to search.
var ErrNoSeries = errors.New("capacity: nothing to search")
