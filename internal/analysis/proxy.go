package analysis

import (
	"fmt"
	"math"
	"strings"

	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// proxyNotes adds to each verdict measured behind a proxy (run --proxy)
// what the proxy added to each protocol against the server reached
// directly, the same scenario and condition otherwise: "through nginx:
// +310 µs p50 and +95 µs server CPU per REST call, ...", medians over the
// batches as the verdict's figures. TLS ends at the proxy, so its cells
// are TLS: they are compared with the direct TLS cells when the run has
// them (--tls on), else with plaintext ones, and the note says so. The
// server CPU is the server's and the proxy's (results.Cell), so what it
// adds is the proxy's CPU and what the proxy changed of the server's.
func proxyNotes(groups []*cellGroup, out []results.Verdict) {
	byKey := map[verdictKey]int{}
	for i, g := range groups {
		byKey[g.key] = i
	}
	for i, g := range groups {
		name := g.key.Condition.Proxy
		if name == "" {
			continue
		}
		k := g.key
		k.Condition.Proxy = ""
		j, ok := byKey[k]
		plaintext := false
		if !ok {
			k.Condition.TLS = false
			j, ok = byKey[k]
			plaintext = true
		}
		if !ok {
			continue
		}
		direct := groups[j]
		var parts []string
		for _, p := range g.protos {
			via, to := g.byProto[p], direct.byProto[p]
			if !hasCalls(via) || !hasCalls(to) {
				continue
			}
			var figs []string
			if d := median(via, results.FigLatencyP50) - median(to, results.FigLatencyP50); !math.IsNaN(d) {
				figs = append(figs, signedUS(d)+" p50")
			}
			if d := median(via, results.FigServerCPU) - median(to, results.FigServerCPU); !math.IsNaN(d) {
				figs = append(figs, signedUS(d)+" server CPU")
			}
			if len(figs) > 0 {
				parts = append(parts, strings.Join(figs, " and ")+" per "+p.Title()+" call")
			}
		}
		if len(parts) == 0 {
			continue
		}
		against := ""
		if plaintext {
			against = fmt.Sprintf(" (TLS at %s, against the server in plaintext)", name)
		}
		note := fmt.Sprintf("through %s: %s%s", name, strings.Join(parts, ", "), against)
		out[i].Notes = append([]string{note}, out[i].Notes...)
	}
}

// signedUS is a difference in microseconds with its sign: "+310 µs",
// "-12 µs".
func signedUS(us float64) string {
	if us < 0 {
		return "-" + format.US(-us)
	}
	return "+" + format.US(us)
}
