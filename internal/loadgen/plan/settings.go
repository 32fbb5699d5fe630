package plan

import (
	"time"

	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/results"
)

// mode names the load mode.
func (c Config) Mode() string { return ModeOf(c.Rate) }

// ModeOf is the mode of cells at rate (a condition's RateRequested).
func ModeOf(rate float64) string {
	if rate > 0 {
		return results.ModeOpen
	}
	return results.ModeClosed
}

// Settings records the run's requested parameters; each dimension's sweep
// as its planDimensions entry records it.
func (c Config) Settings() results.Settings {
	s := results.Settings{
		Protocols:  c.Protocols,
		Scenarios:  c.Scenarios,
		Batches:    c.Batches,
		DurationS:  c.Duration.Seconds(),
		Iterations: c.Iterations,
		WarmupS:    c.Warmup.Seconds(),
		TimeoutS:   c.Timeout.Seconds(),
		Mode:       c.Mode(),
		Repeat:     c.Repeat,
		Segment:    c.settingsSegment(),
		StartAt:    c.settingsStartAt(),
	}
	for _, d := range planTable() {
		if d.settings != nil {
			d.settings(c, &s)
		}
	}
	return s
}

func (c Config) settingsSegment() *results.Segment {
	if c.Segment.Whole() {
		return nil
	}
	s := c.Segment
	return &s
}

func (c Config) settingsStartAt() *time.Time {
	if c.StartAt.IsZero() {
		return nil
	}
	t := c.StartAt.UTC().Round(0)
	return &t
}

// linkNames are the links' canonical texts.
func (c Config) linkNames() []string {
	out := make([]string, len(c.Links))
	for i, l := range c.Links {
		out[i] = l.String()
	}
	return out
}

// settingsLinks are the links for Settings: nil when none is emulated, so
// such documents read as before links existed.
func (c Config) settingsLinks() []string {
	for _, l := range c.Links {
		if !l.None() {
			return c.linkNames()
		}
	}
	return nil
}

// conditionLink is a link's part of a cell's condition: "" for none.
func conditionLink(l link.Spec) string {
	if l.None() {
		return ""
	}
	return l.String()
}
