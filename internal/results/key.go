package results

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/api"
)

// Condition is what a cell was measured under, apart from the protocol,
// the scenario and the batch size: the features a verdict holds for. A new
// dimension of the plan (a link, a payload size, TLS...) is one field here,
// its String part and its Label part; cell keys, verdict groups, compare
// and the reporters pick it up from there. Every field must be comparable
// and its zero value must mean "the default condition", so older documents
// read the same.
type Condition struct {
	Concurrency int `json:"concurrency"`
	// RateRequested is the open-loop rate, calls/s; 0 in closed loop.
	RateRequested float64 `json:"rate_requested,omitempty"`
	// ServerCPUs is the number of CPUs the own server was pinned to; 0
	// when it was not pinned (or the target is not run's own server).
	ServerCPUs int `json:"server_cpus,omitempty"`
	// TLS is true when the calls went over TLS (run --tls).
	TLS bool `json:"tls,omitempty"`
}

// String is the condition's part of a cell key: "c4", "c4/r300".
func (c Condition) String() string {
	s := "c" + strconv.Itoa(c.Concurrency)
	if c.RateRequested > 0 {
		s += "/r" + strconv.FormatFloat(c.RateRequested, 'g', -1, 64)
	}
	if c.ServerCPUs > 0 {
		s += "/s" + strconv.Itoa(c.ServerCPUs)
	}
	if c.TLS {
		s += "/tls"
	}
	return s
}

// Label names the condition in prose: "concurrency 4 · open loop at 300 calls/s".
func (c Condition) Label() string {
	parts := []string{fmt.Sprintf("concurrency %d", c.Concurrency)}
	if c.RateRequested > 0 {
		parts = append(parts, "open loop at "+FormatRate(c.RateRequested)+" calls/s")
	}
	if c.ServerCPUs > 0 {
		parts = append(parts, "server on "+plural(c.ServerCPUs, "CPU"))
	}
	if c.TLS {
		parts = append(parts, "TLS")
	}
	return strings.Join(parts, " · ")
}

// Less orders conditions for display: each field in turn, as declared.
func (c Condition) Less(o Condition) bool {
	if c.Concurrency != o.Concurrency {
		return c.Concurrency < o.Concurrency
	}
	if c.RateRequested != o.RateRequested {
		return c.RateRequested < o.RateRequested
	}
	if c.ServerCPUs != o.ServerCPUs {
		return c.ServerCPUs < o.ServerCPUs
	}
	return !c.TLS && o.TLS
}

// plural says a count of things: "1 CPU", "2 CPUs".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// CellKey identifies a cell within a run and across runs (for compare): the
// features that vary, in the style of grpc-go's benchmark feature sets.
type CellKey struct {
	Scenario api.Scenario `json:"scenario"`
	Protocol api.Protocol `json:"protocol"`
	Batch    int          `json:"batch"`
	Condition
}

// Key is the cell key as text: "small/rest/b100/c1", "large/grpc/b100/c4/r300".
func (k CellKey) Key() string {
	return fmt.Sprintf("%s/%s/b%d/%s", k.Scenario, k.Protocol, k.Batch, k.Condition)
}

// FormatRate formats calls per second for prose: "300", "2.5", "12,000".
func FormatRate(r float64) string {
	if r >= 1000 {
		n := strconv.FormatFloat(r, 'f', 0, 64)
		var b strings.Builder
		for i, ch := range n {
			if i > 0 && (len(n)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(ch)
		}
		return b.String()
	}
	return strconv.FormatFloat(r, 'g', 3, 64)
}
