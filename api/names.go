package api

// Protocol names a way of carrying the contract: the load generator's
// --proto values, the protocol of a result cell and the protocol label of
// the server's metrics. Defined here, once, so the server (the system under
// test) and the load generator share them without depending on each other.
type Protocol string

// The protocols, in display order (Protocols).
const (
	REST         Protocol = "rest"          // JSON over HTTP/1.1
	RESTProtobuf Protocol = "rest-protobuf" // protobuf over HTTP/1.1
	GRPC         Protocol = "grpc"          // protobuf over HTTP/2 (gRPC)
	GRPCWeb      Protocol = "grpc-web"      // gRPC-Web, binary, over HTTP/1.1 or HTTP/2
	Connect      Protocol = "connect"       // the Connect protocol, protobuf, over HTTP/1.1 or HTTP/2
)

// Protocols returns every protocol in display order: REST, then the same
// transport with protobuf, then gRPC, so that each step changes one thing,
// then what a browser can call of gRPC (gRPC-Web, Connect). It is what
// --proto all names and what validation, ranking and reports know.
func Protocols() []Protocol { return []Protocol{REST, RESTProtobuf, GRPC, GRPCWeb, Connect} }

// DefaultProtocols are the protocols a run measures when none is named:
// REST against gRPC, with REST+protobuf between them (the question the
// default run answers).
func DefaultProtocols() []Protocol { return []Protocol{REST, RESTProtobuf, GRPC} }

// Title is the protocol's name in prose ("REST+protobuf").
func (p Protocol) Title() string {
	switch p {
	case REST:
		return "REST"
	case RESTProtobuf:
		return "REST+protobuf"
	case GRPC:
		return "gRPC"
	case GRPCWeb:
		return "gRPC-Web"
	case Connect:
		return "Connect"
	}
	return string(p)
}

// Scenario names one of the contract's four calls as the load generator
// exercises it.
type Scenario string

// The scenarios, in display order (Scenarios).
const (
	Small  Scenario = "small"  // GetVersion / GET /api/MeteoriteLandings
	Large  Scenario = "large"  // GetLargePayloadAsList / GET .../LargePayload
	Stream Scenario = "stream" // GetLargePayload (server stream) / GET .../LargePayload/stream (NDJSON)
	Post   Scenario = "post"   // PostLargePayload / POST .../LargePayload
)

// The stream scenarios (issue 42), in display order (StreamScenarios):
// one call is one message of a stream that carries Options.Messages of
// them. On rest and rest-protobuf the transport is the scenario's:
// upload a chunked POST of NDJSON or delimited protobuf, chat and feed a
// WebSocket with JSON text frames or protobuf binary ones.
const (
	Upload Scenario = "upload" // UploadStream (client stream) / chunked POST .../upload
	Chat   Scenario = "chat"   // Chat (bidirectional) / WebSocket .../chat
	Feed   Scenario = "feed"   // Feed (paced server push) / WebSocket .../feed
)

// Scenarios returns the contract's four calls in display order: what a
// run measures when it names none (and --scenario all).
func Scenarios() []Scenario { return []Scenario{Small, Large, Stream, Post} }

// StreamScenarios returns the stream scenarios in display order: measured
// when named (--scenario upload,chat,feed).
func StreamScenarios() []Scenario { return []Scenario{Upload, Chat, Feed} }

// AllScenarios returns every scenario run accepts: Scenarios, then
// StreamScenarios.
func AllScenarios() []Scenario { return append(Scenarios(), StreamScenarios()...) }

// TitleIn names protocol p as scenario s carries it: for the stream
// scenarios, the transport with the encoding ("WebSocket+JSON",
// "gRPC bidi stream", "Connect server stream"), so that a verdict says
// what was compared; for the others, p.Title().
func (p Protocol) TitleIn(s Scenario) string {
	transport := map[Scenario]string{Upload: "chunked POST", Chat: "WebSocket", Feed: "WebSocket"}[s]
	kind := map[Scenario]string{Upload: "client stream", Chat: "bidi stream", Feed: "server stream"}[s]
	switch {
	case transport == "":
		return p.Title()
	case p == GRPC || p == GRPCWeb || p == Connect:
		return p.Title() + " " + kind
	case p == REST && s == Upload:
		return transport + "+NDJSON"
	case p == REST:
		return transport + "+JSON"
	case p == RESTProtobuf:
		return transport + "+protobuf"
	}
	return p.Title()
}

// IsStream reports whether s is one of the stream scenarios, whose calls
// are messages.
func (s Scenario) IsStream() bool { return s == Upload || s == Chat || s == Feed }

// Method is the RPC the scenario calls (also the method label of the
// server's request counters for it); "" for an unknown scenario.
func (s Scenario) Method() string {
	switch s {
	case Small:
		return MethodGetVersion
	case Large:
		return MethodGetLargePayloadAsList
	case Stream:
		return MethodGetLargePayload
	case Post:
		return MethodPostLargePayload
	case Upload:
		return MethodUploadStream
	case Chat:
		return MethodChat
	case Feed:
		return MethodFeed
	}
	return ""
}

// Title names the scenario with the RPC it calls: "small (GetVersion)",
// "stream (GetLargePayload, streamed)".
func (s Scenario) Title() string {
	m := s.Method()
	switch {
	case m == "":
		return string(s)
	case s == Stream:
		m += ", streamed"
	case s.IsStream():
		m += ", per message"
	}
	return string(s) + " (" + m + ")"
}
