package results

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/link"
)

// Condition is what a cell was measured under, apart from the protocol,
// the scenario and the batch size: the features a verdict holds for. A new
// dimension of the plan (a link, a payload size, TLS...) is one field here
// and one entry of the Dimensions table (dimensions.go); cell keys, labels,
// ordering, verdict groups, compare and the reporters pick it up from
// there. Every field must be comparable and its zero value must mean "the
// default condition", so older documents read the same.
type Condition struct {
	Concurrency int `json:"concurrency"`
	// Conns is the connections per protocol run asked for (run
	// --connections): gRPC's ClientConns, HTTP/2's and HTTP/3's
	// connections, HTTP/1.1's pool; 0 for the protocol's default. (A
	// cell's Connections is how many it opened.)
	Conns int `json:"conns,omitempty"`
	// RateRequested is the open-loop rate, calls/s; 0 in closed loop.
	RateRequested float64 `json:"rate_requested,omitempty"`
	// ServerCPUs is the number of CPUs the own server was pinned to; 0
	// when it was not pinned (or the target is not run's own server).
	ServerCPUs int `json:"server_cpus,omitempty"`
	// Proxy is the reverse proxy the own server was measured behind (run
	// --proxy: "nginx", "caddy", "haproxy"), TLS terminated there; "" for
	// none (the calls went to the server directly).
	Proxy string `json:"proxy,omitempty"`
	// Link is the emulated network link, as link.Spec.String writes it
	// ("100mbit/20ms"); "" for none.
	Link string `json:"link,omitempty"`
	// Records is the payload size the large, stream and post calls asked
	// for (api.QueryRecords); 0 means none was named, so the server's
	// api.DefaultRecords (the original experiment's 1000). The load
	// generator sets it only when --records was given: a default run keys
	// and reads exactly as before.
	Records int `json:"records,omitempty"`
	// Messages is the messages per stream of the stream scenarios
	// (upload, chat, feed; run --messages); 0 for
	// api.DefaultStreamMessages, and for every other scenario.
	Messages int `json:"messages,omitempty"`
	// FeedRate is the records a second the feed scenario asked the server
	// to push on each stream (run --feed-rate); 0 for as fast as the
	// client reads, and for every other scenario.
	FeedRate float64 `json:"feed_rate,omitempty"`
	// FeedTransport is the transport of the rest feed (run
	// --feed-transport): "sse" for Server-Sent Events; "" for WebSocket,
	// and for every other scenario and protocol.
	FeedTransport string `json:"feed_transport,omitempty"`
	// Compress is the compression both ways ("gzip"); "" for none.
	Compress string `json:"compress,omitempty"`
	// TLS is true when the calls went over TLS (run --tls).
	TLS bool `json:"tls,omitempty"`
	// JSONCodec is the JSON library the rest calls were encoded and
	// decoded with, on both sides (run --json-codec: "v2", "sonic"); ""
	// for encoding/json ("std"), and for every other protocol.
	JSONCodec string `json:"json_codec,omitempty"`
	// Endpoint names the user's own endpoints the cell called (run
	// --rest-url, --grpc-method): "GET http://host/items vs
	// items.Items/List at host:9090", the same for both protocols of the
	// pair so that they are compared; "" for the contract's calls.
	Endpoint string `json:"endpoint,omitempty"`
	// Payload is the user's payload the calls carried instead of the
	// meteorites (run --payload), by name and hash of schema and data
	// ("orders.json@1a2b3c4d5e6f"); "" for the meteorites.
	Payload string `json:"payload,omitempty"`
	// Mix is the traffic mix of a mixed-traffic cell (run --mix), as
	// Mix.String writes it ("small=800,large=20"); "" for one scenario.
	// Its JSON name is "traffic": a cell's "mix" is its per-scenario
	// figures (Cell.Mix).
	Mix string `json:"traffic,omitempty"`
	// Engine is the load generator's engine (run --engine): "lean" for
	// the lean engine (package loadgen/lean); "" for the standard one
	// (net/http and grpc-go, every answer decoded).
	Engine string `json:"engine,omitempty"`
	// HTTPVersion is the HTTP version of the calls of rest, rest-protobuf,
	// grpc-web and connect (run --http-version): "2" for HTTP/2 (h2c
	// with prior knowledge in plaintext, ALPN h2 under TLS), "3" for
	// HTTP/3 (QUIC); "" for HTTP/1.1, and for gRPC over HTTP/2 (grpc-go),
	// whose "3" is connect-go's gRPC over HTTP/3.
	HTTPVersion string `json:"http_version,omitempty"`
}

// N is the number of records the condition's calls carry: Records, or
// api.DefaultRecords when unset.
func (c Condition) N() int {
	if c.Records == 0 {
		return api.DefaultRecords
	}
	return c.Records
}

// String is the condition's part of a cell key: "c4", "c4/r300",
// "c1/n10", "c4/gzip": every set dimension's Key, in table order.
func (c Condition) String() string {
	var b strings.Builder
	for _, d := range Dimensions {
		if d.Always || d.IsSet(c) {
			if b.Len() > 0 {
				b.WriteByte('/')
			}
			b.WriteString(d.Key(c))
		}
	}
	return b.String()
}

// A Feature is one feature of a condition, named briefly for chart labels.
type Feature struct {
	Dim   string // "link"
	Short string // "100mbit/20ms"; at the default, how the default reads ("no link")
	Set   bool   // the feature differs from the default condition
}

// Short lists the condition's features briefly, every dimension once, in
// table order: what tells charts' panels and bars apart.
func (c Condition) Short() []Feature {
	out := make([]Feature, len(Dimensions))
	for i, d := range Dimensions {
		out[i] = Feature{Dim: d.Name, Short: d.Unset}
		if d.Always || d.IsSet(c) {
			out[i] = Feature{Dim: d.Name, Short: d.Short(c), Set: true}
		}
	}
	return out
}

// Label names the condition in prose: "concurrency 4 · open loop at 300
// calls/s · link 100 Mbit/s, 20 ms RTT · 10 records".
func (c Condition) Label() string { return c.prose(true) }

// Features names the condition's features other than the worker count:
// "open loop at 300 calls/s · link 100 Mbit/s, 20 ms RTT"; "" when none.
func (c Condition) Features() string { return c.prose(false) }

// prose joins the set dimensions' Prose, and the Always ones' with always.
func (c Condition) prose(always bool) string {
	var parts []string
	for _, d := range Dimensions {
		if (d.Always && always) || (!d.Always && d.IsSet(c)) {
			parts = append(parts, d.Prose(c))
		}
	}
	return strings.Join(parts, " · ")
}

// Apart names in prose the dimensions in which c differs from o: "http 2"
// for c at HTTP/2 and o at the default; "" when none does.
func (c Condition) Apart(o Condition) string {
	var parts []string
	for _, d := range Dimensions {
		if d.Compare(c, o) != 0 && (d.Always || d.IsSet(c)) {
			parts = append(parts, d.Prose(c))
		}
	}
	return strings.Join(parts, " · ")
}

// Less orders conditions for display: by each dimension in table order.
func (c Condition) Less(o Condition) bool {
	for _, d := range Dimensions {
		if r := d.Compare(c, o); r != 0 {
			return r < 0
		}
	}
	return false
}

// plural says a count of things: "1 CPU", "2 CPUs".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// linkLess orders links best first (none, then by bandwidth, then by RTT);
// text that is no link spec sorts after them, by itself.
func linkLess(a, b string) bool {
	la, ea := link.Parse(a)
	lb, eb := link.Parse(b)
	switch {
	case ea != nil || eb != nil:
		if (ea == nil) != (eb == nil) {
			return ea == nil
		}
		return a < b
	}
	return link.Compare(la, lb) < 0
}

// CellKey identifies a cell within a run and across runs (for compare): the
// features that vary, in the style of grpc-go's benchmark feature sets.
type CellKey struct {
	Scenario api.Scenario `json:"scenario"`
	Protocol api.Protocol `json:"protocol"`
	Batch    int          `json:"batch"`
	Condition
}

// Key is the cell key as text: "small/rest/b100/c1", "large/grpc/b100/c4/r300".
func (k CellKey) Key() string {
	return fmt.Sprintf("%s/%s/b%d/%s", k.Scenario, k.Protocol, k.Batch, k.Condition)
}
