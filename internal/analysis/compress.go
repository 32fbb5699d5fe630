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
	againstDefault(groups, "compress", func(i, j int) {
		g, plain := groups[i], groups[j]
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
	})
}

// againstDefault calls f(i, j) for each group i whose condition sets the
// dimension of the JSON field, with j the group of the same scenario and
// condition but that dimension at its default, where there is one.
func againstDefault(groups []*cellGroup, field string, f func(i, j int)) {
	d, ok := results.DimensionByField(field)
	if !ok {
		panic("analysis: no dimension " + field)
	}
	byKey := map[verdictKey]int{}
	for i, g := range groups {
		byKey[g.key] = i
	}
	for i, g := range groups {
		if !d.IsSet(g.key.Condition) {
			continue
		}
		k := g.key
		d.Clear(&k.Condition)
		if j, ok := byKey[k]; ok {
			f(i, j)
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
