package analysis

import (
	"fmt"
	"math"
	"strings"

	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// compressNotes adds to each verdict measured with compression a note that
// compares every protocol with itself without it, under the same condition
// otherwise: where compression pays (bytes) and what it costs (CPU), e.g.
// "gzip against none: REST 6.7x fewer bytes, 2.1x the server CPU, 1.9x the
// client CPU; gRPC ...". Medians over the batches, as the verdict's figures;
// no significance is claimed (it says so only when the run has repeats
// enough for the verdict's own tests).
func compressNotes(groups []*cellGroup, out []results.Verdict) {
	byKey := map[verdictKey]*cellGroup{}
	for _, g := range groups {
		byKey[g.key] = g
	}
	for i, g := range groups {
		if g.key.Condition.Compress == "" {
			continue
		}
		k := g.key
		k.Condition.Compress = ""
		plain := byKey[k]
		if plain == nil {
			continue
		}
		var parts []string
		for _, p := range g.protos {
			with, without := g.byProto[p], plain.byProto[p]
			if !hasCalls(with) || !hasCalls(without) {
				continue
			}
			var figs []string
			if s := ratioWords(median(without, results.FigBytesTotal), median(with, results.FigBytesTotal), "bytes"); s != "" {
				figs = append(figs, s)
			}
			for _, f := range []struct {
				fig  results.Figure
				name string
			}{{results.FigServerCPU, "server CPU"}, {results.FigClientCPU, "client CPU"}} {
				a, b := median(without, f.fig), median(with, f.fig)
				if a > 0 && b > 0 && !math.IsNaN(a) && !math.IsNaN(b) {
					figs = append(figs, format.Ratio(b/a)+" the "+f.name)
				}
			}
			if len(figs) > 0 {
				parts = append(parts, p.Title()+" "+strings.Join(figs, ", "))
			}
		}
		if len(parts) > 0 {
			out[i].Notes = append(out[i].Notes, fmt.Sprintf("%s against none, per call: %s",
				g.key.Condition.Compress, strings.Join(parts, "; ")))
		}
	}
}

// ratioWords says how a figure changed, without to with: "6.7x fewer
// bytes", "1.1x more bytes".
func ratioWords(without, with float64, what string) string {
	if !(without > 0 && with > 0) {
		return ""
	}
	if with <= without {
		return format.Ratio(without/with) + " fewer " + what
	}
	return format.Ratio(with/without) + " more " + what
}
