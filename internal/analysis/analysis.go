// Package analysis draws the verdicts from a result: for each scenario and
// condition, how every protocol compares with the baseline (REST), with
// intervals and a significance label that never claims more than the data
// can show. It sits between the measurements (package results) and the
// reporters, which only format what it computes:
//
//	results.Result.Cells ──Verdicts()──▶ []results.Verdict ──▶ reporters
//	[]results.Verdict ──Crossovers()──▶ []results.Crossover ──▶ reporters
//
// Batch sizes are pooled: the per-call figures compared here do not depend
// on the batch, so one run gives one verdict per question.
package analysis

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/stats"
)

// SaturatedBelow is the fraction of the requested open-loop rate under
// which a cell is saturated: its latency is mostly queueing in front of a
// server (or a load generator) that could not keep up, so no latency
// verdict is drawn from it.
const SaturatedBelow = 0.9

// MinTestSamples is the fewest samples a side needs before the
// Mann-Whitney U test can reject "no difference" at α = 0.05 (with 3 a side
// the smallest possible p-value is 0.1).
const MinTestSamples = 4

// DecodeDominates is the share of a protocol's mean latency spent in the
// client's decoding above which the verdict says the client, not the server
// or the wire, dominates that latency.
const DecodeDominates = 0.5

// compared are the figures each Versus holds, in order. The first four
// make the summary line.
var compared = []results.Figure{
	results.FigLatencyP50,
	results.FigCallsPerS,
	results.FigBytesTotal,
	results.FigServerCPU,
	results.FigLatencyP99,
	results.FigClientCPU,
}

// Apply computes r's verdicts into r.Verdicts and, from them, the payload
// size crossovers into r.Crossovers.
func Apply(r *results.Result) {
	r.Verdicts = Verdicts(r)
	r.Crossovers = Crossovers(r.Verdicts)
	r.Verdicts = append(r.Verdicts, CapacityVerdicts(r.Capacity)...)
}

// Verdicts computes one verdict per scenario and condition present in r's
// cells, in display order.
func Verdicts(r *results.Result) []results.Verdict {
	groups := group(r)
	conditions := map[results.Condition]bool{}
	for _, g := range groups {
		conditions[g.key.Condition] = true
	}
	out := make([]results.Verdict, 0, len(groups))
	for _, g := range groups {
		v := g.verdict(len(conditions) > 1)
		notServedNote(r, &v) // notserved.go
		out = append(out, v)
	}
	compressNotes(groups, out)
	return out
}

// verdictKey is what a verdict answers for.
type verdictKey struct {
	scenario  api.Scenario
	Condition results.Condition
}

// cellGroup is the cells of one verdict, by protocol, each protocol's cells
// in batch order.
type cellGroup struct {
	key     verdictKey
	protos  []api.Protocol // display order
	byProto map[api.Protocol][]*results.Cell
}

func group(r *results.Result) []*cellGroup {
	byKey := map[verdictKey]*cellGroup{}
	var out []*cellGroup
	for i := range r.Cells {
		c := &r.Cells[i]
		k := verdictKey{c.Scenario, c.Condition}
		g := byKey[k]
		if g == nil {
			g = &cellGroup{key: k, byProto: map[api.Protocol][]*results.Cell{}}
			byKey[k] = g
			out = append(out, g)
		}
		if _, ok := g.byProto[c.Protocol]; !ok {
			g.protos = append(g.protos, c.Protocol)
		}
		g.byProto[c.Protocol] = append(g.byProto[c.Protocol], c)
	}
	borrow(out, byKey)
	scenOrder := append(slices.Clone(r.Settings.Scenarios), api.Scenarios()...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].key, out[j].key
		if ra, rb := rank(scenOrder, a.scenario), rank(scenOrder, b.scenario); ra != rb {
			return ra < rb
		}
		return a.Condition.Less(b.Condition)
	})
	for _, g := range out {
		sort.SliceStable(g.protos, func(i, j int) bool {
			return rank(api.Protocols(), g.protos[i]) < rank(api.Protocols(), g.protos[j])
		})
		for _, cs := range g.byProto {
			sort.SliceStable(cs, func(i, j int) bool { return cs[i].Batch < cs[j].Batch })
		}
	}
	return out
}

// borrow completes the groups of a condition that some protocols are not
// measured at (a dimension with results.Dimension.Protocols set, such as
// the JSON codec): such a protocol's cells come from the group of the same
// condition with those dimensions at their default, so "JSON by sonic"
// compares rest with sonic against grpc as it was measured.
func borrow(groups []*cellGroup, byKey map[verdictKey]*cellGroup) {
	var all []api.Protocol
	for _, g := range groups {
		for _, p := range g.protos {
			if !slices.Contains(all, p) {
				all = append(all, p)
			}
		}
	}
	for _, g := range groups {
		for _, p := range all {
			if _, ok := g.byProto[p]; ok {
				continue
			}
			base := g.key.Condition
			for _, d := range results.Dimensions {
				if len(d.Protocols) > 0 && !slices.Contains(d.Protocols, p) && d.IsSet(base) {
					d.Clear(&base)
				}
			}
			if base == g.key.Condition {
				continue
			}
			if from := byKey[verdictKey{g.key.scenario, base}]; from != nil && len(from.byProto[p]) > 0 {
				g.byProto[p] = from.byProto[p]
				g.protos = append(g.protos, p)
			}
		}
	}
}

func rank[T comparable](order []T, v T) int {
	if i := slices.Index(order, v); i >= 0 {
		return i
	}
	return len(order)
}

// verdict compares every protocol of the group with the baseline.
func (g *cellGroup) verdict(nameCondition bool) results.Verdict {
	v := results.Verdict{Scenario: g.key.scenario, Condition: g.key.Condition, Versus: []results.Versus{}}
	batches := map[int]bool{}
	for _, cs := range g.byProto {
		for _, c := range cs {
			batches[c.Batch] = true
		}
	}
	for b := range batches {
		v.Batches = append(v.Batches, b)
	}
	sort.Ints(v.Batches)

	var ok []api.Protocol // protocols with successful calls and no suspect cell
	var suspect []string
	for _, p := range g.protos {
		switch why := suspectOf(g.byProto[p]); {
		case why != "":
			v.Notes = append(v.Notes, p.Title()+": suspect, no verdict: "+why)
			suspect = append(suspect, p.Title())
		case hasCalls(g.byProto[p]):
			ok = append(ok, p)
		default:
			v.Notes = append(v.Notes, p.Title()+": no successful call")
		}
	}
	if len(suspect) > 0 && (len(ok) < 2 || !slices.Contains(ok, api.REST)) {
		v.Summary = g.prefix(nameCondition) + "no verdict: the cells of " + strings.Join(suspect, ", ") + " are suspect (their figures contradict each other or were distorted; see the notes)"
		return v
	}
	if len(ok) == 0 {
		v.Summary = g.prefix(nameCondition) + "no protocol had a successful call"
		return v
	}
	v.Baseline = ok[0]
	if slices.Contains(ok, api.REST) {
		v.Baseline = api.REST
	}
	base := g.byProto[v.Baseline]
	tooFew := false
	for _, p := range ok {
		if p == v.Baseline {
			continue
		}
		vs := versus(base, g.byProto[p])
		vs.Protocol = p
		for _, r := range vs.Ratios {
			tooFew = tooFew || r.Significance == results.TooFew
		}
		v.Versus = append(v.Versus, vs)
	}
	g.encodingShare(&v)
	if tooFew {
		v.Notes = append(v.Notes, fmt.Sprintf("%s: too few to test, use --repeat 5", repeatsPhrase(base)))
	}
	for _, p := range ok {
		if n := decodeNote(p, g.byProto[p]); n != "" {
			v.Notes = append(v.Notes, n)
		}
	}
	var bound []string
	for _, p := range ok {
		if n := bandwidthNote(p, g.key.Condition, g.byProto[p]); n != "" {
			v.Notes = append(v.Notes, n)
			bound = append(bound, p.Title())
		}
	}
	v.Summary = g.prefix(nameCondition) + summary(&v)
	if len(bound) > 0 {
		v.Summary += "; bandwidth-bound: " + strings.Join(bound, ", ")
	}
	if n := loadNote(ok, g.byProto); n != "" {
		v.Notes = append(v.Notes, n)
		v.Summary += "; server CPU compared at different loads"
	}
	if len(suspect) > 0 {
		v.Summary += "; " + strings.Join(suspect, ", ") + " suspect, left out"
	}
	return v
}

// suspectOf is why a protocol's cells are suspect ("" when none is): the
// first reason of the first suspect cell.
func suspectOf(cs []*results.Cell) string {
	for _, c := range cs {
		if len(c.Suspect) > 0 {
			return c.Suspect[0]
		}
	}
	return ""
}

// LoadApart is the ratio of two protocols' server utilisations above which
// their server CPU per call was measured at loads too far apart to compare
// as a protocol property: an idle Go server pays wake-ups that a busy one
// amortises (small REST measured 52 µs per call at concurrency 1, 16 µs at
// 8).
const LoadApart = 1.5

// loadNote says when the protocols' server CPU per call was measured at
// different loads: "server CPU per call measured at different loads: REST
// 45% busy at 2,100 calls/s, gRPC 21% at 1,900".
func loadNote(protos []api.Protocol, by map[api.Protocol][]*results.Cell) string {
	lo, hi := math.Inf(1), 0.0
	var parts []string
	for _, p := range protos {
		var us []float64
		for _, c := range by[p] {
			if c.ServerUtilisation != nil && c.Calls > 0 {
				us = append(us, *c.ServerUtilisation)
			}
		}
		if len(us) == 0 {
			return ""
		}
		u := stats.Summarize(us).Median
		lo, hi = min(lo, u), max(hi, u)
		parts = append(parts, fmt.Sprintf("%s %.0f%% busy at %s calls/s", p.Title(), 100*u, results.FormatRate(median(by[p], results.FigCallsPerS))))
	}
	if len(parts) < 2 || lo <= 0 || hi/lo < LoadApart {
		return ""
	}
	return "server CPU per call measured at different loads (" + strings.Join(parts, ", ") + "): a busier server amortises its wake-ups over more calls, so part of the CPU ratio is the load's"
}

// prefix names the verdict at the start of its summary line.
func (g *cellGroup) prefix(nameCondition bool) string {
	s := string(g.key.scenario)
	// Name the condition when verdicts differ by it, or when it is more
	// than a worker count (a rate, pinned CPUs, a link...).
	if nameCondition || g.key.Condition != (results.Condition{Concurrency: g.key.Condition.Concurrency}) {
		s += " · " + g.key.Condition.Label()
	}
	return s + ": "
}

func hasCalls(cs []*results.Cell) bool {
	for _, c := range cs {
		if c.Calls > 0 {
			return true
		}
	}
	return false
}

// repeatsPhrase says how many measurements a cell had: "3 repeats".
func repeatsPhrase(cs []*results.Cell) string {
	n := 1
	for _, c := range cs {
		n = max(n, len(c.Repeats))
	}
	if n == 1 {
		return "1 measurement"
	}
	return fmt.Sprintf("%d repeats", n)
}

// saturated reports whether an open-loop cell fell short of its rate.
func saturated(c *results.Cell) bool {
	return c.RateRequested > 0 && c.RateAchieved < SaturatedBelow*c.RateRequested
}

// versus compares one protocol's cells with the baseline's, figure by
// figure, pooling batches.
func versus(base, other []*results.Cell) results.Versus {
	vs := results.Versus{Ratios: []results.Ratio{}}
	open := base[0].RateRequested > 0
	var sat []string
	for _, side := range [][]*results.Cell{base, other} {
		for _, c := range side {
			if saturated(c) {
				sat = append(sat, fmt.Sprintf("%s reached %s of %s calls/s", c.Protocol.Title(),
					results.FormatRate(c.RateAchieved), results.FormatRate(c.RateRequested)))
				break
			}
		}
	}
	if len(sat) > 0 {
		vs.Saturated = "saturated: " + strings.Join(sat, ", ")
	}
	for _, f := range compared {
		isLatency := f == results.FigLatencyP50 || f == results.FigLatencyP99
		switch {
		case isLatency && vs.Saturated != "":
			continue // queueing, not the protocol
		case f == results.FigCallsPerS && open && vs.Saturated == "":
			continue // both kept the requested rate: the ratio is 1 by design
		}
		if r, ok := ratio(base, other, f); ok {
			vs.Ratios = append(vs.Ratios, r)
		}
	}
	return vs
}

// ratio pools one figure's paired samples over the batches both sides
// measured: per repeat where both sides were repeated (repeat i of one
// protocol ran next to repeat i of the other, so their ratio cancels drift),
// else per cell.
func ratio(base, other []*results.Cell, f results.Figure) (results.Ratio, bool) {
	var bs, os []float64 // paired samples
	repeated := false
	for _, bc := range base {
		var oc *results.Cell
		for _, c := range other {
			if c.Batch == bc.Batch {
				oc = c
			}
		}
		if oc == nil {
			continue
		}
		if len(bc.Repeats) > 1 && len(oc.Repeats) > 1 {
			repeated = true
			for i := range min(len(bc.Repeats), len(oc.Repeats)) {
				b, ok1 := bc.Repeats[i][f]
				o, ok2 := oc.Repeats[i][f]
				if ok1 && ok2 && b > 0 && o > 0 {
					bs, os = append(bs, b), append(os, o)
				}
			}
			continue
		}
		b, ok1 := bc.Figure(f)
		o, ok2 := oc.Figure(f)
		if ok1 && ok2 && b > 0 && o > 0 {
			bs, os = append(bs, b), append(os, o)
		}
	}
	if len(bs) == 0 {
		return results.Ratio{}, false
	}
	info, _ := f.Info()
	iv := stats.Summarize(stats.Ratios(os, bs))
	r := results.Ratio{Figure: f, Ratio: iv.Median, N: iv.N}
	r.Better = (r.Ratio > 1) == info.HigherIsBetter && r.Ratio != 1
	if iv.N > 1 {
		lo, hi := iv.Lo, iv.Hi
		r.Lo, r.Hi = &lo, &hi
	}
	if repeated {
		test(&r, bs, os)
	} else {
		r.Significance = results.Untested
	}
	return r, true
}

// test sets r's significance from paired samples of the baseline (bs) and
// the other side (os): too few to test under MinTestSamples, else the
// Mann-Whitney U test's verdict and p-value.
func test(r *results.Ratio, bs, os []float64) {
	if len(bs) < MinTestSamples {
		r.Significance = results.TooFew
		return
	}
	cmp := stats.Compare(bs, os)
	p := cmp.P
	r.P = &p
	r.Significance = results.NotSignificant
	if cmp.Significant {
		r.Significance = results.Significant
	}
}

// encodingShare splits gRPC's p50 gain over REST into the encoding's part
// (what rest-protobuf, the same HTTP/1.1 transport with protobuf, already
// gains) and the transport's.
func (g *cellGroup) encodingShare(v *results.Verdict) {
	if v.Baseline != api.REST {
		return
	}
	rest, pb, grpc := g.byProto[api.REST], g.byProto[api.RESTProtobuf], g.byProto[api.GRPC]
	if !hasCalls(pb) || !hasCalls(grpc) {
		return
	}
	for _, cs := range [][]*results.Cell{rest, pb, grpc} {
		for _, c := range cs {
			if saturated(c) {
				return
			}
		}
	}
	r, p, q := median(rest, results.FigLatencyP50), median(pb, results.FigLatencyP50), median(grpc, results.FigLatencyP50)
	gain := r - q
	// Only a clear gain splits meaningfully: under 5% the share is noise.
	if math.IsNaN(gain) || math.IsNaN(p) || gain <= 0.05*r {
		return
	}
	share := (r - p) / gain
	for i := range v.Versus {
		if v.Versus[i].Protocol == api.GRPC {
			v.Versus[i].EncodingShare = &share
		}
	}
}

// median is the median of a figure over the cells that have it.
func median(cs []*results.Cell, f results.Figure) float64 {
	var vs []float64
	for _, c := range cs {
		if v, ok := c.Figure(f); ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return math.NaN()
	}
	return stats.Summarize(vs).Median
}

// decodeNote says when the client's own decoding is most of a protocol's
// latency.
func decodeNote(p api.Protocol, cs []*results.Cell) string {
	dec, lat := median(cs, results.FigDecodeMean), 0.0
	var means []float64
	for _, c := range cs {
		if c.Calls > 0 {
			means = append(means, c.LatencyUS.Mean)
		}
	}
	if len(means) > 0 {
		lat = stats.Summarize(means).Median
	}
	if math.IsNaN(dec) || lat <= 0 || dec/lat < DecodeDominates {
		return ""
	}
	// The decode time is wall time: the note says it is work only where the
	// client spent at least that much CPU per call. Above it the decoding
	// goroutine waited (for a processor, or for data a stream decodes as it
	// arrives), and the note would blame the decoder for waiting.
	cpu := median(cs, results.FigClientCPU)
	if math.IsNaN(cpu) || dec > cpu {
		return ""
	}
	return fmt.Sprintf("%s: the client's decoding takes %s of the %s mean latency (%.0f%%; wall time, within the client's %s of CPU per call): the client, not the server or the wire, dominates it",
		p.Title(), results.FormatUS(dec), results.FormatUS(lat), 100*dec/lat, results.FormatUS(cpu))
}

// BandwidthBound is the share of an emulated link's rate above which a
// protocol's traffic is said to be bound by the link, not by CPU.
const BandwidthBound = 0.9

// bandwidthNote says when a protocol's traffic filled the emulated link:
// "REST bandwidth-bound at 56 calls/s: 219.6 KB per call on 100 Mbit/s".
func bandwidthNote(p api.Protocol, cond results.Condition, cs []*results.Cell) string {
	if cond.Link == "" {
		return ""
	}
	l, err := link.Parse(cond.Link)
	if err != nil || l.None() {
		return ""
	}
	calls := median(cs, results.FigCallsPerS)
	sent, recv := median(cs, results.FigBytesSent), median(cs, results.FigBytesReceived)
	per := math.Max(sent, recv) // the direction that carries the payload
	if math.IsNaN(calls) || math.IsNaN(per) || calls*per < BandwidthBound*l.BytesPerSecond() {
		return ""
	}
	return fmt.Sprintf("%s bandwidth-bound at %s calls/s: %s per call on %s (%.0f%% of the link)",
		p.Title(), results.FormatRate(calls), fmtBytes(per), fmtBitRate(float64(l.BitsPerSecond())), 100*calls*per/l.BytesPerSecond())
}

// fmtBytes formats bytes as the reporters do: "219.6 KB".
func fmtBytes(b float64) string {
	return scaled(b, unit{1e6, "%.2f MB"}, unit{1e3, "%.1f KB"}, unit{1, "%.0f B"})
}

// fmtBitRate formats a link rate: "100 Mbit/s".
func fmtBitRate(bps float64) string {
	return scaled(bps, unit{1e9, "%g Gbit/s"}, unit{1e6, "%g Mbit/s"}, unit{1e3, "%g kbit/s"})
}

// unit is one step of a scale: a value of at least size is written, in
// format, as a multiple of size.
type unit struct {
	size   float64
	format string
}

// scaled writes v in the first of units (largest first) that it reaches,
// and in the last one when it reaches none.
func scaled(v float64, units ...unit) string {
	u := units[len(units)-1]
	for _, c := range units[:len(units)-1] {
		if v >= c.size {
			u = c
			break
		}
	}
	return fmt.Sprintf(u.format, v/u.size)
}
