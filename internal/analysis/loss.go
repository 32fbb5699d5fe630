package analysis

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/results"
)

// lossNotes adds to each verdict measured on a link with packet loss the
// head-of-line clause: how each protocol's p99 changed against the same
// link without loss, under the same condition otherwise, and over how
// many connections each protocol carried its calls ("at 1% loss, gRPC's
// p99 rose 3.1x and REST's 1.4x: one connection against 16"). One lost
// packet stalls every call on its TCP connection until it is resent: a
// protocol that multiplexes its calls on one connection (gRPC, HTTP/2)
// stalls them all, one with a connection per call in flight stalls one.
// Medians over the batches; no significance is claimed.
func lossNotes(groups []*cellGroup, out []results.Verdict) {
	byKey := map[verdictKey]int{}
	for i, g := range groups {
		byKey[g.key] = i
	}
	for i, g := range groups {
		l, err := link.Parse(g.key.Condition.Link)
		if err != nil || l.Loss() == 0 {
			continue
		}
		k := g.key
		k.Condition.Link = l.Clean().String()
		j, ok := byKey[k]
		if !ok {
			continue
		}
		var rises, conns []string
		for _, p := range g.protos {
			lossy, clean := g.byProto[p], groups[j].byProto[p]
			if !hasCalls(lossy) || !hasCalls(clean) {
				continue
			}
			a, b := median(clean, results.FigLatencyP99), median(lossy, results.FigLatencyP99)
			if !(a > 0 && b > 0) {
				continue
			}
			verb := "rose"
			if b < a {
				verb = "fell"
			}
			rises = append(rises, fmt.Sprintf("%s's p99 %s %s (%s to %s)", p.Title(), verb, format.Ratio(math.Max(a, b)/math.Min(a, b)), format.US(a), format.US(b)))
			conns = append(conns, p.Title()+" on "+connectionsText(lossy))
		}
		if len(rises) < 2 {
			continue
		}
		out[i].Notes = append(out[i].Notes, fmt.Sprintf("at %s loss, against the same link without: %s; %s",
			strings.TrimSuffix(strconv.FormatFloat(l.Loss()*100, 'f', -1, 64), ".0")+"%", joinAnd(rises), strings.Join(conns, ", ")))
	}
}

// connectionsText is how many connections a protocol's cells opened:
// "one connection", "16 connections".
func connectionsText(cs []*results.Cell) string {
	n := 0
	for _, c := range cs {
		n = max(n, c.Connections)
	}
	if n == 1 {
		return "one connection"
	}
	return strconv.Itoa(n) + " connections"
}

// joinAnd joins "a", "b" and "c" as "a, b and c".
func joinAnd(parts []string) string {
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
