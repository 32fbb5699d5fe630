package analysis

import (
	"slices"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// codecName names a JSON codec in prose; "" is the default, encoding/json.
func codecName(c string) string {
	if c == "" || c == "std" {
		return "encoding/json"
	}
	return c
}

// codecNotes adds to each verdict measured with a JSON codec other than the
// default the answer to "switch the JSON library, or move to gRPC?": how
// REST's p50 with that codec compares with REST's with encoding/json, and
// how gRPC's lead over REST changes, e.g. "with sonic, REST large is 2.1x
// [1.9, 2.3] faster than with encoding/json (p50); gRPC's lead falls from
// 5.0x to 2.4x". Every figure comes from the verdicts' own rules: the same
// pooled ratio and significance test, "within noise" where the test does
// not reject "no difference", nothing from suspect or saturated cells.
func codecNotes(groups []*cellGroup, out []results.Verdict) {
	againstDefault(groups, "json_codec", func(i, j int) {
		if n := codecNote(groups[i], groups[j], out[j], out[i]); n != "" {
			out[i].Notes = append([]string{n}, out[i].Notes...)
		}
	})
}

// codecNote compares REST in g (measured with its codec) with REST in std
// (encoding/json), and gRPC's p50 ratio in the two verdicts.
func codecNote(g, std *cellGroup, vStd, vCodec results.Verdict) string {
	rest, restStd := g.byProto[api.REST], std.byProto[api.REST]
	if !usable(rest) || !usable(restStd) {
		return ""
	}
	r, ok := ratio(restStd, rest, results.FigLatencyP50)
	if !ok {
		return ""
	}
	s := "with " + codecName(g.key.Condition.JSONCodec) + ", REST " + string(g.key.scenario)
	switch d := sideText(&r); {
	case r.Significance == results.NotSignificant:
		s += "'s p50 is " + d + " of " + codecName("") + "'s"
	case strings.HasPrefix(d, "the same"):
		s += "'s p50 is the same as with " + codecName("")
	default:
		s += " is " + d + " than with " + codecName("") + " (p50)"
	}
	if lead := leadText(p50Of(vStd, api.GRPC), p50Of(vCodec, api.GRPC)); lead != "" {
		s += "; " + lead
	}
	return s
}

// usable reports whether a protocol's cells can carry a latency verdict:
// some successful call, no suspect and no saturated cell.
func usable(cs []*results.Cell) bool {
	return hasCalls(cs) && suspectOf(cs) == "" && !slices.ContainsFunc(cs, saturated)
}

// p50Of is the p50 ratio of protocol p against the verdict's baseline
// (REST), nil when the verdict has none.
func p50Of(v results.Verdict, p api.Protocol) *results.Ratio {
	if v.Baseline != api.REST {
		return nil
	}
	for _, vs := range v.Versus {
		if vs.Protocol != p {
			continue
		}
		for i := range vs.Ratios {
			if vs.Ratios[i].Figure == results.FigLatencyP50 {
				return &vs.Ratios[i]
			}
		}
	}
	return nil
}

// leadText says how gRPC's p50 against REST changed from the default codec
// (before) to the other (after): "gRPC's lead falls from 5.0x to 2.4x",
// "gRPC's lead of 4.8x falls within noise (±30%)", or both sides spelled
// out where neither phrase fits.
func leadText(before, after *results.Ratio) string {
	if before == nil || after == nil {
		return ""
	}
	sig := func(r *results.Ratio) bool { return r.Significance != results.NotSignificant }
	switch {
	case sig(before) && sig(after) && before.Better && after.Better:
		b, a := format.Ratio(1/before.Ratio), format.Ratio(1/after.Ratio)
		switch {
		case a == b:
			return "gRPC's lead stays at " + b
		case after.Ratio > before.Ratio:
			return "gRPC's lead falls from " + b + " to " + a
		default:
			return "gRPC's lead grows from " + b + " to " + a
		}
	case sig(before) && before.Better && !sig(after):
		return "gRPC's lead of " + format.Ratio(1/before.Ratio) + " falls " + noise(*after)
	}
	return "gRPC against REST (p50): " + sideText(before) + " with " + codecName("") + ", " + sideText(after) + " with this codec"
}

// sideText is one p50 ratio of gRPC against REST, briefly: "5.0x
// [4.2, 5.3] faster", "within noise (±30%)".
func sideText(r *results.Ratio) string {
	if r.Significance == results.NotSignificant {
		return noise(*r)
	}
	return strings.TrimSuffix(Describe(*r), " (p50)")
}
