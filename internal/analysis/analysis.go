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
	"slices"
	"sort"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
)

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
	codecNotes(groups, out)
	decomposeNotes(groups, out) // decompose.go
	lossNotes(groups, out)      // loss.go
	proxyNotes(groups, out)     // proxy.go
	feedNotes(groups, out)      // feed.go
	return out
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
	if len(g.protos) == 1 && len(g.lentTo) > 0 {
		// The plan measured only this protocol here, and the others at
		// another value of a dimension that does not change it (gRPC,
		// always HTTP/2, beside REST at --http-version 2,3): the verdicts
		// there compare with these cells.
		v.Summary = g.prefix(nameCondition) + "only " + v.Baseline.Title() + " was measured at this condition; it is compared with the other protocols at " + g.lenders() + ", below"
	} else {
		v.Summary = g.prefix(nameCondition) + summary(&v)
	}
	if len(v.Versus) > 0 {
		if b := breakdownClause(v.Baseline, headVersus(&v).Protocol, g.byProto); b != "" { // breakdown.go
			v.Summary += "; " + b
		}
	}
	if d := genericDecoding(ok, g.byProto); d != "" {
		v.Summary += "; " + d
	}
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

// genericDecoding says, for a user's endpoints, which protocols' clients
// decoded the answers without a schema's types, and why ("REST decoded
// generic JSON values (the answer is not the JSON of a shop.v1.Order:
// ...)"): their client decode time, and latency, are then not what a
// client with generated code would see.
func genericDecoding(ps []api.Protocol, byProto map[api.Protocol][]*results.Cell) string {
	var out []string
	for _, p := range ps {
		for _, c := range byProto[p] {
			if c.ClientDecoding.Generic() {
				s := p.Title() + " decoded " + c.ClientDecoding.Phrase()
				if c.ClientDecodingWhy != "" {
					s += " (" + c.ClientDecodingWhy + ")"
				}
				out = append(out, s)
				break
			}
		}
	}
	return strings.Join(out, ", ")
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

// prefix names the verdict at the start of its summary line.
func (g *cellGroup) prefix(nameCondition bool) string {
	s := string(g.key.scenario)
	// Name the condition when verdicts differ by it, or when it is more
	// than a worker count (a rate, pinned CPUs, a link...).
	if nameCondition || g.key.Condition != (results.Condition{Concurrency: g.key.Condition.Concurrency}) {
		s += " · " + g.key.Condition.Label()
	}
	if at := g.addresses(); at != "" {
		s += " · " + at
	}
	return s + ": "
}

// lenders names what sets apart the conditions of the groups that borrowed
// g's cells: "http 2 and http 3".
func (g *cellGroup) lenders() string {
	var at []string
	for _, b := range g.lentTo {
		if f := b.key.Condition.Apart(g.key.Condition); f != "" && !slices.Contains(at, f) {
			at = append(at, f)
		}
	}
	if len(at) == 0 {
		return "other conditions"
	}
	return joinAnd(at) // loss.go
}

// addresses names where each protocol's calls went when the protocols had
// addresses of their own (--target rest=…,grpc=…): "REST at A, gRPC at
// B"; "" when they shared the run's target.
func (g *cellGroup) addresses() string {
	var at []string
	for _, p := range g.protos {
		for _, c := range g.byProto[p] {
			if c.Target != "" {
				at = append(at, p.Title()+" at "+c.Target)
				break
			}
		}
	}
	return strings.Join(at, ", ")
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
