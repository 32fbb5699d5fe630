package analysis

import (
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
)

// decomposed are the figures a decomposition splits: latency and the
// server's cost of a call.
var decomposed = []results.Figure{results.FigLatencyP50, results.FigServerCPU}

// decomposeNotes adds to each verdict at HTTP/1.1 whose scenario and
// condition were also measured at HTTP/2 (run --http-version 1.1,2) the
// decomposition of REST→gRPC (results.Decomposition), when REST and
// REST+protobuf at HTTP/1.1, REST+protobuf at HTTP/2 and gRPC are all
// usable (successful calls, nothing suspect or saturated). It compares two
// groups along one dimension, as the codec and compression notes do; a
// run without those cells gets no decomposition.
//
// With HTTP/3's cells too (--http-version 1.1,2,3) the transport splits
// again: a note on the HTTP/1.1 verdict follows REST+protobuf, and each
// other protocol over plain HTTP, from HTTP/1.1 to 2 to 3, and gRPC from
// 2 to 3 (http3Line).
func decomposeNotes(groups []*cellGroup, out []results.Verdict) {
	byVersion := map[int]map[string]int{} // h1's group: its other versions' groups
	againstDefault(groups, "http_version", func(hv, h1 int) {
		v := groups[hv].key.Condition.HTTPVersion
		if byVersion[h1] == nil {
			byVersion[h1] = map[string]int{}
		}
		byVersion[h1][v] = hv
		if v != "2" {
			return
		}
		if dec := decompose(groups[h1], groups[hv]); dec != nil {
			out[h1].Decomposition = dec
			out[h1].Notes = append([]string{dec.Line}, out[h1].Notes...)
		}
	})
	for h1, vs := range byVersion {
		h2, ok2 := vs["2"]
		h3, ok3 := vs["3"]
		if !ok2 || !ok3 {
			continue
		}
		if line := http3Line(groups[h1], groups[h2], groups[h3]); line != "" {
			out[h1].Notes = append(out[h1].Notes, line)
		}
	}
}

// http3Line says how each protocol over plain HTTP changed from HTTP/1.1
// to 2 and from 2 to 3, and gRPC from 2 to 3 (grpc3Part), on the
// decomposed figures, medians as the steps: "large, transport
// HTTP/1.1→2→3 (p50): REST+protobuf 1.30x slower, then 1.10x faster; ...;
// gRPC 2→3 1.20x slower (grpc-go, then connect-go)". "" without a usable
// step.
func http3Line(h1, h2, h3 *cellGroup) string {
	var parts []string
	for _, f := range decomposed {
		var ps []string
		for _, p := range h1.protos {
			if p == api.GRPC {
				if part := grpc3Part(h1, h3, f); part != "" {
					ps = append(ps, part)
				}
				continue
			}
			s1, s2, s3 := h1.byProto[p], h2.byProto[p], h3.byProto[p]
			if !usable(s1) || !usable(s2) || !usable(s3) {
				continue
			}
			a := step("", side{"", s1}, side{"", s2})
			b := step("", side{"", s2}, side{"", s3})
			ra, rb := ratioOf(a, f), ratioOf(b, f)
			if ra == nil || rb == nil {
				continue
			}
			ps = append(ps, p.Title()+" "+stepText(*ra)+", then "+stepText(*rb))
		}
		if len(ps) > 0 {
			info, _ := f.Info()
			parts = append(parts, info.Label+": "+strings.Join(ps, "; "))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return string(h1.key.scenario) + ", transport HTTP/1.1→2→3: " + strings.Join(parts, " · ")
}

// grpc3Part is gRPC's step from HTTP/2 (h1's cells: grpc-go, at every
// version but 3) to HTTP/3 (h3's: connect-go's gRPC over QUIC) on figure
// f, the library named, as it changes with the transport: "gRPC 2→3
// 1.20x slower (grpc-go, then connect-go)". "" when gRPC was not measured
// at HTTP/3 (h3 borrowed its HTTP/2 cells) or a side is unusable.
func grpc3Part(h1, h3 *cellGroup, f results.Figure) string {
	s2, s3 := h1.byProto[api.GRPC], h3.byProto[api.GRPC]
	if !usable(s2) || !usable(s3) || s3[0].HTTPVersion != h3.key.Condition.HTTPVersion {
		return ""
	}
	r := ratioOf(step("", side{"", s2}, side{"", s3}), f)
	if r == nil {
		return ""
	}
	return "gRPC 2→3 " + stepText(*r) + " (grpc-go, then connect-go)"
}

// side is one protocol at one HTTP version, named so ("REST+protobuf/2").
type side struct {
	name  string
	cells []*results.Cell
}

// decompose is REST→gRPC in steps from h1's cells (HTTP/1.1) and h2's
// (HTTP/2); nil when a side is missing or unusable.
func decompose(h1, h2 *cellGroup) *results.Decomposition {
	rest := side{"REST/1.1", h1.byProto[api.REST]}
	pb1 := side{"REST+protobuf/1.1", h1.byProto[api.RESTProtobuf]}
	pb2 := side{"REST+protobuf/2", h2.byProto[api.RESTProtobuf]}
	grpc := side{"gRPC", h1.byProto[api.GRPC]}
	for _, s := range []side{rest, pb1, pb2, grpc} {
		if !usable(s.cells) {
			return nil
		}
	}
	dec := &results.Decomposition{
		Steps: []results.Step{step("encoding", rest, pb1), step("transport", pb1, pb2), step("framing", pb2, grpc)},
		Whole: step("REST→gRPC", rest, grpc),
	}
	if len(dec.Whole.Ratios) == 0 {
		return nil
	}
	for _, p := range []api.Protocol{api.GRPCWeb, api.Connect} {
		for _, v := range []struct {
			name string
			g    *cellGroup
		}{{"2", h2}, {"1.1", h1}} {
			if cs := v.g.byProto[p]; usable(cs) {
				if st := step("browser", grpc, side{p.Title() + "/" + v.name, cs}); len(st.Ratios) > 0 {
					dec.Browser = append(dec.Browser, st)
				}
			}
		}
	}
	dec.Line = decompositionLine(h1.key.scenario, dec)
	return dec
}

// step compares to with from on each decomposed figure both have: the
// ratio of their medians (so that steps multiply exactly), with the paired
// ratios' interval and significance (ratio, as a verdict's).
func step(name string, from, to side) results.Step {
	st := results.Step{Name: name, From: from.name, To: to.name, Ratios: []results.Ratio{}}
	for _, f := range decomposed {
		r, ok := ratio(from.cells, to.cells, f)
		b, o := median(from.cells, f), median(to.cells, f)
		if !ok || !(b > 0 && o > 0) {
			continue
		}
		info, _ := f.Info()
		r.Ratio = o / b
		r.Better = (r.Ratio > 1) == info.HigherIsBetter && r.Ratio != 1
		st.Ratios = append(st.Ratios, r)
	}
	return st
}

// ratioOf is st's ratio of figure f; nil when it has none.
func ratioOf(st results.Step, f results.Figure) *results.Ratio {
	for i := range st.Ratios {
		if st.Ratios[i].Figure == f {
			return &st.Ratios[i]
		}
	}
	return nil
}

// decompositionLine says dec in one line: "small: REST→gRPC 1.30x faster
// (p50) = encoding 1.10x faster × transport 1.05x slower × framing 1.25x
// faster; server CPU: ...; in a browser against gRPC (p50): gRPC-Web/2
// 1.40x slower, ...".
func decompositionLine(sc api.Scenario, dec *results.Decomposition) string {
	var parts []string
	for _, f := range decomposed {
		whole := ratioOf(dec.Whole, f)
		if whole == nil {
			continue
		}
		steps := make([]string, 0, len(dec.Steps))
		for _, st := range dec.Steps {
			r := ratioOf(st, f)
			if r == nil {
				steps = nil
				break
			}
			name := st.Name
			if f == decomposed[0] {
				name += stepWhat[st.Name] // said once
			}
			steps = append(steps, name+" "+stepText(*r))
		}
		if steps == nil {
			continue
		}
		head := "REST→gRPC " + Noise(*whole) // names the figure: "server CPU within noise (±8%)"
		if whole.Significance != results.NotSignificant {
			head = "REST→gRPC " + Describe(*whole) // "5.0x faster (p50)", "2.5x less server CPU"
		}
		parts = append(parts, head+" = "+strings.Join(steps, " × "))
	}
	s := string(sc) + ": " + strings.Join(parts, "; ") + " (ratios of the medians, so the steps multiply to the whole; the verdict's own ratio pairs the repeats)"
	if len(dec.Browser) > 0 {
		var bs []string
		for _, st := range dec.Browser {
			if r := ratioOf(st, results.FigLatencyP50); r != nil {
				bs = append(bs, st.To+" "+stepText(*r))
			}
		}
		if len(bs) > 0 {
			s += "; in a browser against gRPC (p50): " + strings.Join(bs, ", ")
		}
	}
	return s
}

// stepWhat says what each step changes, the first time the line names it.
var stepWhat = map[string]string{
	"encoding":  " (JSON→protobuf, HTTP/1.1)",
	"transport": " (HTTP/1.1→2, protobuf)",
	"framing":   " (REST+protobuf/2→gRPC)",
}

// stepText is a step's ratio in words without the figure's suffix:
// "1.10x [1.02, 1.18] faster", "1.5x less server CPU", "1.05x [0.9, 1.2]
// slower, within noise (±12%)".
func stepText(r results.Ratio) string {
	if r.Significance == results.NotSignificant {
		// The factor still, so that the steps can be multiplied.
		shown := r
		shown.Significance = results.Untested
		return strings.TrimSuffix(Describe(shown), " (p50)") + ", " + noise(r)
	}
	return strings.TrimSuffix(Describe(r), " (p50)")
}
