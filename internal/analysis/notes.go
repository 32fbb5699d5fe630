package analysis

import (
	"fmt"
	"math"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/stats"
)

// DecodeDominates is the share of a protocol's mean latency spent in the
// client's decoding above which the verdict says the client, not the server
// or the wire, dominates that latency.
const DecodeDominates = 0.5

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
		parts = append(parts, fmt.Sprintf("%s %s busy at %s calls/s", p.Title(), format.Percent(u), format.Rate(median(by[p], results.FigCallsPerS))))
	}
	if len(parts) < 2 || lo <= 0 || hi/lo < LoadApart {
		return ""
	}
	return "server CPU per call measured at different loads (" + strings.Join(parts, ", ") + "): a busier server amortises its wake-ups over more calls, so part of the CPU ratio is the load's"
}

// encodingShare splits gRPC's p50 gain over REST into the encoding's part
// (what rest-protobuf, the same HTTP/1.1 transport with protobuf, already
// gains) and the transport's.
func (g *cellGroup) encodingShare(v *results.Verdict) {
	if v.Baseline != api.REST || g.key.Condition.HTTPVersion != "" {
		// At HTTP/2, REST+protobuf is no longer HTTP/1.1's transport
		// (decompose.go splits the gain across versions).
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
	return fmt.Sprintf("%s: the client's decoding takes %s of the %s mean latency (%s; wall time, within the client's %s of CPU per call): the client, not the server or the wire, dominates it",
		p.Title(), format.US(dec), format.US(lat), format.Percent(dec/lat), format.US(cpu))
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
	return fmt.Sprintf("%s bandwidth-bound at %s calls/s: %s per call on %s (%s of the link)",
		p.Title(), format.Rate(calls), format.Bytes(per), format.BitRate(float64(l.BitsPerSecond())), format.Percent(calls*per/l.BytesPerSecond()))
}
