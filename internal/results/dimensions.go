package results

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/link"
)

// A Dimension is one dimension of a cell's Condition: everything the
// documents and the reporters know about it. The cell key, the labels,
// the display order, the chart features and the CSV columns are derived
// from the Dimensions table.
type Dimension struct {
	// Name names the dimension in Feature.Dim: "link".
	Name string
	// Field is the dimension's JSON field in Condition and its column in
	// every CSV: "link".
	Field string
	// Always is true for the dimension every key and label names whatever
	// its value (the concurrency); the others are named only when set.
	Always bool
	// IsSet reports whether c differs from the default in this dimension,
	// and Clear sets the default. The default is the field's zero value
	// (so older documents, which omit the field, read as the default). An
	// Always dimension has no default: its Clear is nil.
	IsSet func(c Condition) bool
	Clear func(c *Condition)
	// Key is the dimension's part of the cell key when set, without the
	// "/" that joins the parts: "l100mbit-20ms". Keys are matched across
	// documents (merge, compare): a Key must never change.
	Key func(c Condition) string
	// Short names the value briefly for charts when set ("100mbit/20ms");
	// Unset is how the default reads briefly ("no link").
	Short func(c Condition) string
	Unset string
	// Prose names the value in a label when set: "link 100 Mbit/s, 20 ms RTT".
	Prose func(c Condition) string
	// Compare orders conditions by this dimension for display; a nonzero
	// result decides (the dimensions are compared in table order).
	Compare func(a, b Condition) int
	// CSV writes the value in a CSV cell (column Field), as the JSON has it.
	CSV func(c Condition) string
	// Protocols, when set, are the only protocols the dimension changes
	// anything for (the JSON codec: rest). The others are measured at its
	// default only, and a verdict at another value compares with those
	// cells (analysis); the load generator's plan reads it from here.
	Protocols []api.Protocol
	// Also, when set, are values other than the default at which the
	// dimension changes something for a protocol Protocols leaves out:
	// that protocol is measured at them too, and at the default for the
	// others (gRPC at HTTP/3, connect-go's gRPC over QUIC, beside
	// grpc-go's HTTP/2 at the default). Only for a dimension of Values.
	Also map[api.Protocol][]string
	// Scenarios, when set, are the only scenarios the dimension changes
	// anything for (the feed's transport: feed); the others are measured
	// at its default only.
	Scenarios []api.Scenario

	// CSVLast puts the dimension's CSV column after those of every
	// dimension without it, whatever its place in the table: a dimension
	// shown in the middle (the proxy, next to the server's CPUs) whose
	// column must not move the columns that CSV files already have.
	CSVLast bool

	// Values, when set, make the dimension one the load generator runs
	// from this entry alone (loadgen's plan derives the rest): the names
	// run accepts, in the order it lists them and measures them; Default
	// is the one a run without the flag measures. Get and Set read and
	// write the value in a Condition, "" standing for Default (so keys
	// and documents of runs that do not sweep it stay as they were). Its
	// flag fills loadgen's Config.Sweeps[Field]; each cell's client gets
	// its value in call.Options.Settings[Field]; Settings.Sweeps records
	// the sweep. Swept fills the entry's other functions from these.
	Default string
	Values  []string
	Get     func(c Condition) string
	Set     func(c *Condition, v string)
}

// For reports whether the dimension changes anything for protocol p at
// c's value: always without Protocols; for a protocol Protocols leaves
// out, at the values Also lists for it only.
func (d Dimension) For(p api.Protocol, c Condition) bool {
	if len(d.Protocols) == 0 || slices.Contains(d.Protocols, p) {
		return true
	}
	return d.Get != nil && d.IsSet(c) && slices.Contains(d.Also[p], d.Get(c))
}

// Swept is d, a dimension of Values, with the functions it leaves nil
// derived from Get and Set as named derives them (set when not the
// Default, in CSV and briefly named by its value), and: keyed by its value
// prefixed with the Field ("_" as "-": "http-version-2"); in prose as
// "Name value"; ordered as Values lists the values (the Default first).
func Swept(d Dimension) Dimension {
	if d.Key == nil {
		prefix := strings.ReplaceAll(d.Field, "_", "-") + "-"
		d.Key = func(c Condition) string { return prefix + d.Get(c) }
	}
	if d.Unset == "" {
		d.Unset = d.Default
	}
	if d.Prose == nil {
		d.Prose = func(c Condition) string { return d.Name + " " + d.Get(c) }
	}
	if d.Compare == nil {
		rank := func(v string) int {
			if v == "" {
				v = d.Default
			}
			if i := slices.Index(d.Values, v); i >= 0 {
				return i
			}
			return len(d.Values) // from a newer document
		}
		d.Compare = func(a, b Condition) int {
			va, vb := d.Get(a), d.Get(b)
			return cmp.Or(cmp.Compare(rank(va), rank(vb)), strings.Compare(va, vb))
		}
	}
	return named(d, d.Get, d.Set)
}

// named is d, a dimension whose value is a name held in one string of
// Condition (get and set it), "" standing for the default, with the
// functions it leaves nil derived from get and set: set when not "",
// cleared to "", named briefly and in prose, and written in CSV, as the
// value itself; ordered by name.
func named(d Dimension, get func(c Condition) string, set func(c *Condition, v string)) Dimension {
	if d.IsSet == nil {
		d.IsSet = func(c Condition) bool { return get(c) != "" }
	}
	if d.Clear == nil {
		d.Clear = func(c *Condition) { set(c, "") }
	}
	if d.Short == nil {
		d.Short = get
	}
	if d.Prose == nil {
		d.Prose = get
	}
	if d.CSV == nil {
		d.CSV = get
	}
	if d.Compare == nil {
		d.Compare = func(a, b Condition) int { return strings.Compare(get(a), get(b)) }
	}
	return d
}

// Dimensions is the table of a condition's dimensions, in display order
// (the order of Condition's fields, keys, labels and CSV columns), after
// grpc-go benchmark's Features and generateFeatures.
//
// Adding a dimension whose values are names (say a REST --http-version
// 1.1,2 for rest and rest-protobuf) is, and is only:
//   - a field of Condition with its JSON tag (omitempty), whose zero value
//     is what runs did before it existed, so older documents and keys read
//     the same;
//   - one entry at the end of this table, through Swept: its Name, Field,
//     Default, Values, Protocols, Get and Set (a Key part that no other
//     part starts like, never changed once shipped), so existing keys keep
//     their parts and the CSV columns stay appended;
//   - the flag that fills loadgen's Config.Sweeps[Field], and the adapter
//     that reads call.Options.Settings[Field].
//
// Keys, labels, display order, verdict groups, compare's matching, chart
// labels and the CSV columns follow from the entry, and in the load
// generator the plan's cross product (protocols outside Protocols
// measured once, at the default), validation, Settings.Sweeps and each
// cell's client setting (loadgen's TestDimensionIsOneDeclaration adds one
// this way). The dimensions whose values are not names of a list (the
// rate, the link, the concurrency, payload sizes), or that are swept from
// a Config field of their own, have an entry in loadgen's planDimensions
// too: how a Config sweeps, records, checks and hands each on. What names
// one dimension on purpose stays apart: the range checks of values read
// (validate.go) and the analyses about one dimension (analysis's
// compression notes and payload crossovers).
var Dimensions = []Dimension{
	{
		Name: "concurrency", Field: "concurrency", Always: true,
		IsSet:   func(c Condition) bool { return true },
		Key:     func(c Condition) string { return "c" + strconv.Itoa(c.Concurrency) },
		Short:   func(c Condition) string { return "c" + strconv.Itoa(c.Concurrency) },
		Prose:   func(c Condition) string { return "concurrency " + strconv.Itoa(c.Concurrency) },
		Compare: func(a, b Condition) int { return cmp.Compare(a.Concurrency, b.Concurrency) },
		CSV:     func(c Condition) string { return strconv.Itoa(c.Concurrency) },
	},
	{
		Name: "rate", Field: "rate_requested",
		IsSet: func(c Condition) bool { return c.RateRequested > 0 },
		Clear: func(c *Condition) { c.RateRequested = 0 },
		Key:   func(c Condition) string { return "r" + strconv.FormatFloat(c.RateRequested, 'g', -1, 64) },
		Short: func(c Condition) string { return format.Rate(c.RateRequested) + "/s" },
		Unset: "closed loop",
		Prose: func(c Condition) string { return "open loop at " + format.Rate(c.RateRequested) + " calls/s" },
		Compare: func(a, b Condition) int {
			return differ(a.RateRequested != b.RateRequested, a.RateRequested < b.RateRequested)
		},
		CSV: func(c Condition) string {
			if c.RateRequested <= 0 {
				return ""
			}
			return strconv.FormatFloat(c.RateRequested, 'f', -1, 64)
		},
	},
	{
		Name: "cpus", Field: "server_cpus",
		IsSet:   func(c Condition) bool { return c.ServerCPUs > 0 },
		Clear:   func(c *Condition) { c.ServerCPUs = 0 },
		Key:     func(c Condition) string { return "s" + strconv.Itoa(c.ServerCPUs) },
		Short:   func(c Condition) string { return "server " + plural(c.ServerCPUs, "CPU") },
		Unset:   "unpinned",
		Prose:   func(c Condition) string { return "server on " + plural(c.ServerCPUs, "CPU") },
		Compare: func(a, b Condition) int { return cmp.Compare(a.ServerCPUs, b.ServerCPUs) },
		CSV:     func(c Condition) string { return strconv.Itoa(c.ServerCPUs) },
	},
	named(Dimension{
		Name: "proxy", Field: "proxy", Unset: "direct", CSVLast: true,
		Key:   func(c Condition) string { return "proxy-" + c.Proxy },
		Prose: func(c Condition) string { return "through " + c.Proxy },
		Compare: func(a, b Condition) int {
			return cmp.Or(cmp.Compare(proxyRank(a.Proxy), proxyRank(b.Proxy)), strings.Compare(a.Proxy, b.Proxy))
		},
	}, func(c Condition) string { return c.Proxy }, func(c *Condition, v string) { c.Proxy = v }),
	named(Dimension{
		Name: "link", Field: "link", Unset: "no link",
		Key: func(c Condition) string { return "l" + strings.ReplaceAll(c.Link, "/", "-") },
		Prose: func(c Condition) string {
			if l, err := link.Parse(c.Link); err == nil {
				return "link " + l.Label()
			}
			return "link " + c.Link // from a newer document, say
		},
		Compare: func(a, b Condition) int { return differ(a.Link != b.Link, linkLess(a.Link, b.Link)) },
	}, func(c Condition) string { return c.Link }, func(c *Condition, v string) { c.Link = v }),
	{
		Name: "records", Field: "records",
		IsSet:   func(c Condition) bool { return c.Records > 0 },
		Clear:   func(c *Condition) { c.Records = 0 },
		Key:     func(c Condition) string { return "n" + strconv.Itoa(c.Records) },
		Short:   func(c Condition) string { return format.Records(c.Records) },
		Prose:   func(c Condition) string { return format.Records(c.Records) },
		Compare: func(a, b Condition) int { return cmp.Compare(a.N(), b.N()) }, // unset is the default size
		CSV:     func(c Condition) string { return strconv.Itoa(c.Records) },
	},
	named(Dimension{
		Name: "compress", Field: "compress", Unset: "identity",
		Key: func(c Condition) string { return c.Compress },
	}, func(c Condition) string { return c.Compress }, func(c *Condition, v string) { c.Compress = v }),
	{
		Name: "tls", Field: "tls",
		IsSet:   func(c Condition) bool { return c.TLS },
		Clear:   func(c *Condition) { c.TLS = false },
		Key:     func(c Condition) string { return "tls" },
		Short:   func(c Condition) string { return "TLS" },
		Unset:   "plaintext",
		Prose:   func(c Condition) string { return "TLS" },
		Compare: func(a, b Condition) int { return differ(a.TLS != b.TLS, !a.TLS) },
		CSV:     func(c Condition) string { return strconv.FormatBool(c.TLS) },
	},
	named(Dimension{
		Name: "json codec", Field: "json_codec", Unset: "std",
		Key:   func(c Condition) string { return "json-" + c.JSONCodec },
		Prose: func(c Condition) string { return "JSON by " + c.JSONCodec },
		Compare: func(a, b Condition) int {
			return differ(a.JSONCodec != b.JSONCodec, jsonCodecLess(a.JSONCodec, b.JSONCodec))
		},
		Protocols: []api.Protocol{api.REST},
	}, func(c Condition) string { return c.JSONCodec }, func(c *Condition, v string) { c.JSONCodec = v }),
	named(Dimension{
		Name: "endpoint", Field: "endpoint", Unset: "the contract",
		Key: func(c Condition) string { return endpointKey(c.Endpoint) },
	}, func(c Condition) string { return c.Endpoint }, func(c *Condition, v string) { c.Endpoint = v }),
	named(Dimension{
		Name: "payload", Field: "payload", Unset: "meteorites",
		Key:   func(c Condition) string { return "payload-" + strings.ReplaceAll(c.Payload, "/", "-") },
		Prose: func(c Condition) string { return "payload " + c.Payload },
	}, func(c Condition) string { return c.Payload }, func(c *Condition, v string) { c.Payload = v }),
	named(Dimension{
		Name: "traffic", Field: "traffic", Unset: "one scenario",
		Key:   func(c Condition) string { return "mix-" + c.Mix },
		Prose: func(c Condition) string { return "mix " + c.Mix },
	}, func(c Condition) string { return c.Mix }, func(c *Condition, v string) { c.Mix = v }),
	named(Dimension{
		// The engine last: verdicts are per condition, so they never
		// compare a lean cell with a standard one.
		Name: "engine", Field: "engine", Unset: "standard engine",
		Key:   func(c Condition) string { return "engine-" + c.Engine },
		Short: func(c Condition) string { return c.Engine + " engine" },
		Prose: func(c Condition) string { return c.Engine + " engine" },
	}, func(c Condition) string { return c.Engine }, func(c *Condition, v string) { c.Engine = v }),
	Swept(Dimension{
		// gRPC is HTTP/2 (grpc-go) at the default, and at 3 connect-go's
		// gRPC over HTTP/3; its HTTP/1.1 and 2 are the same cells. HTTP/3
		// is QUIC on UDP, always TLS.
		Name: "http", Field: "http_version", Default: "1.1", Values: []string{"1.1", "2", "3"},
		Protocols: []api.Protocol{api.REST, api.RESTProtobuf, api.GRPCWeb, api.Connect},
		Also:      map[api.Protocol][]string{api.GRPC: {"3"}},
		Get:       func(c Condition) string { return c.HTTPVersion },
		Set:       func(c *Condition, v string) { c.HTTPVersion = v },
	}),
	// At the end, as every new dimension (its CSV column appended: CSV
	// headers only grow); the plan walks it right after the concurrency
	// (loadgen's planDimensions).
	{
		Name: "connections", Field: "conns",
		IsSet:   func(c Condition) bool { return c.Conns > 0 },
		Clear:   func(c *Condition) { c.Conns = 0 },
		Key:     func(c Condition) string { return "conn" + strconv.Itoa(c.Conns) },
		Short:   func(c Condition) string { return plural(c.Conns, "conn") },
		Unset:   "default connections",
		Prose:   func(c Condition) string { return plural(c.Conns, "connection") + " per protocol" },
		Compare: func(a, b Condition) int { return cmp.Compare(a.Conns, b.Conns) },
		CSV:     func(c Condition) string { return strconv.Itoa(c.Conns) },
	},
	// The stream scenarios' dimensions at the end, as the CSV columns
	// only grow at their end (report's TestCSVHeaderOnlyGrows); the plan
	// walks them right after records (loadgen's planDimensions).
	{
		Name: "messages", Field: "messages",
		IsSet:   func(c Condition) bool { return c.Messages > 0 },
		Clear:   func(c *Condition) { c.Messages = 0 },
		Key:     func(c Condition) string { return "m" + strconv.Itoa(c.Messages) },
		Short:   func(c Condition) string { return strconv.Itoa(c.Messages) + " msgs/stream" },
		Unset:   strconv.Itoa(api.DefaultStreamMessages) + " msgs/stream",
		Prose:   func(c Condition) string { return strconv.Itoa(c.Messages) + " messages a stream" },
		Compare: func(a, b Condition) int { return cmp.Compare(a.Messages, b.Messages) },
		CSV:     func(c Condition) string { return strconv.Itoa(c.Messages) },
	},
	{
		Name: "feed rate", Field: "feed_rate",
		IsSet:   func(c Condition) bool { return c.FeedRate > 0 },
		Clear:   func(c *Condition) { c.FeedRate = 0 },
		Key:     func(c Condition) string { return "fr" + strconv.FormatFloat(c.FeedRate, 'g', -1, 64) },
		Short:   func(c Condition) string { return format.Rate(c.FeedRate) + " rec/s/stream" },
		Unset:   "unpaced feed",
		Prose:   func(c Condition) string { return "feed at " + format.Rate(c.FeedRate) + " records/s a stream" },
		Compare: func(a, b Condition) int { return cmp.Compare(a.FeedRate, b.FeedRate) },
		CSV: func(c Condition) string {
			if c.FeedRate <= 0 {
				return ""
			}
			return strconv.FormatFloat(c.FeedRate, 'f', -1, 64)
		},
	},
	Swept(Dimension{
		// The rest feed over Server-Sent Events instead of a WebSocket
		// (SSE carries text: JSON only, so rest alone).
		Name: "feed transport", Field: "feed_transport", Default: "websocket", Values: []string{"websocket", "sse"},
		Protocols: []api.Protocol{api.REST}, Scenarios: []api.Scenario{api.Feed},
		Get: func(c Condition) string { return c.FeedTransport },
		Set: func(c *Condition, v string) { c.FeedTransport = v },
	}),
}

// endpointKey is an endpoint's part of a cell key: "ep-" and a hash of its
// name (a URL has slashes, which join a key's parts).
func endpointKey(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("ep-%08x", h.Sum32())
}

// proxyRank orders proxies as run --proxy lists them: none (""), nginx,
// caddy, haproxy, then any other (from a newer document).
func proxyRank(p string) int {
	if i := slices.Index([]string{"", "nginx", "caddy", "haproxy"}, p); i >= 0 {
		return i
	}
	return 4
}

// jsonCodecLess orders JSON codecs as run --json-codec lists them: std
// (""), v2, sonic, then any other (from a newer document) by name.
func jsonCodecLess(a, b string) bool {
	rank := func(s string) int {
		switch s {
		case "":
			return 0
		case "v2":
			return 1
		case "sonic":
			return 2
		}
		return 3
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra < rb
	}
	return a < b
}

// DimensionByField is the dimension whose JSON field (CSV column) is field.
func DimensionByField(field string) (Dimension, bool) {
	for _, d := range Dimensions {
		if d.Field == field {
			return d, true
		}
	}
	return Dimension{}, false
}

// differ is a Compare result from "the values differ" and "a is less":
// 0, -1 or 1. For orders that are not total (links that are no spec), two
// different values neither of which is less compare as 1 both ways, so the
// dimension still decides, as "neither is less".
func differ(ne, less bool) int {
	switch {
	case !ne:
		return 0
	case less:
		return -1
	}
	return 1
}
