package analysis

import (
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// words are how a ratio of each figure reads: when the protocol is better,
// when it is worse, a suffix, and the figure's name.
var words = map[results.Figure][4]string{
	results.FigLatencyP50: {"faster", "slower", " (p50)", "p50"},
	results.FigLatencyP99: {"faster", "slower", " (p99)", "p99"},
	results.FigCallsPerS:  {"more calls/s", "fewer calls/s", "", "calls/s"},
	results.FigBytesTotal: {"fewer bytes", "more bytes", "", "bytes"},
	results.FigServerCPU:  {"less server CPU", "more server CPU", "", "server CPU"},
	results.FigClientCPU:  {"less client CPU", "more client CPU", "", "client CPU"},
}

// Noise says a ratio whose test did not reject "no difference": the figure
// and the half-width of its interval, "p50 within noise (±6%)", instead of
// a direction the data cannot show.
func Noise(r results.Ratio) string { return wordsOf(r.Figure)[3] + " " + noise(r) }

// noise is Noise without the figure's name: "within noise (±6%)".
func noise(r results.Ratio) string {
	s := "within noise"
	if r.Lo != nil && r.Hi != nil {
		s += " (±" + format.Percent(max(*r.Hi-1, 1-*r.Lo)) + ")"
	}
	return s
}

func wordsOf(f results.Figure) [4]string {
	if w, ok := words[f]; ok {
		return w
	}
	info, _ := f.Info()
	return [4]string{"better " + info.Label, "worse " + info.Label, "", info.Label}
}

// Describe says a ratio in words, as a factor of at least 1 with its
// interval: "3.9x [3.6, 4.4] more calls/s", "2.0x slower (p50)".
func Describe(r results.Ratio) string {
	if r.Significance == results.NotSignificant {
		return Noise(r)
	}
	w := wordsOf(r.Figure)
	info, _ := r.Figure.Info()
	if r.Ratio == 1 || format.Factor(max(r.Ratio, 1/r.Ratio)) == "1.00" {
		return "the same " + w[3] // "1.00x slower" says nothing
	}
	// factor > 1 reads "x better"; flip when lower is better.
	f, lo, hi := r.Ratio, r.Lo, r.Hi
	if !info.HigherIsBetter {
		f = 1 / f
		if lo != nil && hi != nil {
			l, h := 1 / *hi, 1 / *lo
			lo, hi = &l, &h
		}
	}
	word := w[0]
	if f < 1 {
		word = w[1]
		f = 1 / f
		if lo != nil && hi != nil {
			l, h := 1 / *hi, 1 / *lo
			lo, hi = &l, &h
		}
	}
	s := format.Factor(f) + "x"
	if lo != nil && hi != nil && format.Factor(*lo) != format.Factor(*hi) {
		s += " [" + format.Factor(*lo) + ", " + format.Factor(*hi) + "]"
	}
	s += " " + word + w[2]
	return s
}

// Line says one protocol against the baseline in words, every figure:
// "gRPC against REST: 3.9x faster (p50), 3.9x more calls/s, ...".
func Line(baseline api.Protocol, vs results.Versus) string {
	parts := ratioTexts(vs, len(vs.Ratios))
	if vs.Saturated != "" {
		parts = append([]string{vs.Saturated + ": no latency verdict"}, parts...)
	}
	s := vs.Protocol.Title() + " against " + baseline.Title() + ": " + strings.Join(parts, ", ")
	if vs.EncodingShare != nil {
		s += "; " + shareText(*vs.EncodingShare)
	}
	return s
}

func ratioTexts(vs results.Versus, n int) []string {
	var parts []string
	for i, r := range vs.Ratios {
		if i >= n {
			break
		}
		parts = append(parts, Describe(r))
	}
	return parts
}

// summaryFigures are the figures of the summary line.
var summaryFigures = map[results.Figure]bool{
	results.FigLatencyP50: true, results.FigCallsPerS: true, results.FigBytesTotal: true, results.FigServerCPU: true,
}

// summary is the verdict's line after its prefix: the headline protocol
// (gRPC, else the first) against the baseline on the summary figures, the
// encoding's share of the gain, and rest-protobuf's p50 when no share was
// drawn.
func summary(v *results.Verdict) string {
	// A stream scenario of the contract (a user's endpoint pair may share
	// its name: its cells name their endpoint).
	stream := v.Scenario.IsStream() && v.Condition.Endpoint == ""
	title := func(p api.Protocol) string {
		switch {
		case !stream:
			return p.Title()
		case p == api.REST && v.Condition.FeedTransport == "sse":
			return "SSE+JSON"
		}
		return p.TitleIn(v.Scenario)
	}
	if len(v.Versus) == 0 {
		return "only " + title(v.Baseline) + " had successful calls: nothing to compare"
	}
	// A stream scenario's calls are messages: its latency is per message,
	// its rate messages/s.
	perMessage := strings.NewReplacer(" (p50)", " per message (p50)", "calls/s", "messages/s")
	if !stream {
		perMessage = strings.NewReplacer()
	}
	head := headVersus(v)
	var parts []string
	for _, r := range head.Ratios {
		if !summaryFigures[r.Figure] {
			continue
		}
		d := Describe(r)
		if r.Figure == results.FigLatencyP50 {
			d = strings.Replace(d, " (p50)", " than "+title(v.Baseline)+" (p50)", 1)
			d = strings.Replace(d, "p50 within noise", "p50 within noise of "+title(v.Baseline), 1)
		}
		parts = append(parts, perMessage.Replace(d))
	}
	s := title(head.Protocol) + " " + strings.Join(parts, ", ")
	if head.Saturated != "" {
		s = head.Saturated + ": no latency verdict; " + s
	}
	if head.EncodingShare != nil && !stream {
		s += "; " + shareText(*head.EncodingShare)
	} else {
		for _, vs := range v.Versus {
			if vs.Protocol == head.Protocol {
				continue
			}
			for _, r := range vs.Ratios {
				if r.Figure == results.FigLatencyP50 {
					s += "; " + title(vs.Protocol) + " " + perMessage.Replace(Describe(r)) + encodingAgain(stream, v.Condition.FeedTransport == "sse", vs.Protocol, r)
				}
			}
		}
	}
	return s
}

// headVersus is the protocol a verdict's line is about: gRPC, else the
// last compared. v has a Versus.
func headVersus(v *results.Verdict) results.Versus {
	head := v.Versus[len(v.Versus)-1]
	for _, vs := range v.Versus {
		if vs.Protocol == api.GRPC {
			head = vs
		}
	}
	return head
}

// encodingAgain says, on a stream scenario's verdict, what
// REST+protobuf's ratio to REST means: the same transport, the encoding
// changed. Within noise, the encoding again made no difference.
func encodingAgain(stream, sse bool, p api.Protocol, r results.Ratio) string {
	switch {
	case !stream || p != api.RESTProtobuf:
		return ""
	case sse:
		return ": against SSE+JSON, the transport changed too"
	case r.Significance == results.NotSignificant:
		return ": the encoding again made no difference"
	}
	return ": the encoding's part, on the same transport"
}

// shareText says the encoding's part of gRPC's latency gain.
func shareText(share float64) string {
	switch {
	case share >= 0.95:
		return "all of the gain from the encoding (rest-protobuf, still HTTP/1.1, has " + format.Percent(share) + " of it)"
	case share < 0.05:
		return "the gain is the transport's, not the encoding's (rest-protobuf has " + format.Percent(share) + " of it)"
	}
	return format.Percent(share) + " of the gain from the encoding (rest-protobuf)"
}
