package plan

import "time"

// Bounds are how long one cell is measured: Warmup unmeasured, then until
// Duration or Iterations batches (open loop: Iterations × batch calls),
// the first reached. With neither, the session's Config.CellLimit bounds
// the cell.
type Bounds struct {
	Warmup     time.Duration // 0: none
	Duration   time.Duration
	Iterations int
}

// bounds are the bounds of every cell of c (after WithDefaults).
func (c Config) Bounds() Bounds {
	return Bounds{Warmup: c.Warmup, Duration: c.Duration, Iterations: c.Iterations}
}

// CellBounds are the bounds Run measures each cell of c within, its
// defaults filled: what Session.Measure takes.
func (c Config) CellBounds() Bounds { return c.WithDefaults().Bounds() }
