// Package api holds the parts of the contract that api/meteor.proto cannot
// say: the REST routes and media types, the RPC method names the server's
// metrics are labelled with, and those metrics' names. The server and the
// load generator both use these, so the two sides cannot drift apart.
package api

// REST routes (HTTP/1.1, or HTTP/2: h2c with prior knowledge, ALPN h2 over TLS).
const (
	PathVersion = "/api/MeteoriteLandings"                     // GET: GetVersion
	PathList    = "/api/MeteoriteLandings/LargePayload"        // GET: GetLargePayloadAsList; POST: PostLargePayload
	PathStream  = "/api/MeteoriteLandings/LargePayload/stream" // GET: GetLargePayload
	PathUpload  = "/api/MeteoriteLandings/upload"              // POST, chunked NDJSON or delimited protobuf: UploadStream
	PathChat    = "/api/MeteoriteLandings/chat"                // GET, WebSocket: Chat
	PathFeed    = "/api/MeteoriteLandings/feed"                // GET, WebSocket or Server-Sent Events: Feed
	PathHealth  = "/healthz"
	PathMetrics = "/metrics"
)

// Media types of REST bodies.
const (
	TypeJSON     = "application/json"
	TypeNDJSON   = "application/x-ndjson"   // the JSON stream: one record a line
	TypeProtobuf = "application/x-protobuf" // a message; on the stream route, varint-delimited messages
)

// gRPC-Web and Connect: the contract's service (api/meteor.proto) over
// plain HTTP, on the same port, HTTP/1.1 or HTTP/2. A request to
// PathRPCPrefix+method (POST) is one call of that RPC, with protobuf
// bodies; the records a list or stream call answers are asked for with
// the MetadataRecords header, as in gRPC metadata.
const (
	// PathRPCPrefix is the path of every RPC, followed by the method
	// name: "/MeteoriteLandingsService.MeteoriteLandingsService/GetVersion".
	PathRPCPrefix = "/MeteoriteLandingsService.MeteoriteLandingsService/"

	// gRPC over HTTP/2 (the native grpc-go server): the content-type of
	// a connection's first request sends it there.
	TypeGRPC      = "application/grpc"
	TypeGRPCProto = "application/grpc+proto"
	// gRPC-Web, binary: 5-byte prefixed messages (flag 0, big-endian
	// length), then a trailer frame (flag 0x80) whose body is the
	// trailers as HTTP/1 header lines, grpc-status among them.
	TypeGRPCWeb      = "application/grpc-web"
	TypeGRPCWebProto = "application/grpc-web+proto"
	// Connect, unary: the request message as the whole body, the answer
	// likewise; an error is a JSON body with a non-200 status.
	TypeConnectProto = "application/proto"
	// Connect, streaming (GetLargePayload): messages prefixed as in gRPC,
	// the last frame (flag 0x02) a JSON end-of-stream message.
	TypeConnectStreamProto = "application/connect+proto"
	// HeaderConnectProtocolVersion: Connect clients send it with "1".
	HeaderConnectProtocolVersion = "Connect-Protocol-Version"
)

// RPC method names, also the method label of the server's metrics for the
// REST route that does the same work.
const (
	MethodGetVersion            = "GetVersion"
	MethodGetLargePayloadAsList = "GetLargePayloadAsList"
	MethodGetLargePayload       = "GetLargePayload"
	MethodPostLargePayload      = "PostLargePayload"
	MethodUploadStream          = "UploadStream"
	MethodChat                  = "Chat"
	MethodFeed                  = "Feed"
)

// The streams both ways (UploadStream, Chat, Feed) in the REST world: a
// chunked POST for the upload, WebSocket for chat and feed, Server-Sent
// Events for feed. The messages are the gRPC methods' (api/meteor.proto);
// in JSON, a record as the other routes write it, and the fields below.
const (
	// TypeEventStream is Server-Sent Events: GET PathFeed with this
	// Accept answers "data: <record as JSON>" events (JSON only: SSE
	// carries text).
	TypeEventStream = "text/event-stream"
	// QueryMessages and QueryRate are the feed's FeedRequest on REST:
	// GET PathFeed?messages=N&rate=R (records per second; 0 or absent:
	// as fast as the client reads).
	QueryMessages = "messages"
	QueryRate     = "rate"
	// QueryAccessToken carries the bearer token of a WebSocket or SSE
	// request from a browser, which cannot set Authorization on them
	// (RFC 6750 §2.3); the header works too.
	QueryAccessToken = "access_token"
	// SubprotocolProtobuf, offered in Sec-WebSocket-Protocol on PathFeed,
	// asks for binary frames of protobuf MeteoriteLanding messages;
	// without it the frames are text, JSON. On PathChat each message is
	// answered in its own frame type: text frames are JSON ChatMessages,
	// binary frames protobuf ones.
	SubprotocolProtobuf = "meteorbench.protobuf"
	SubprotocolJSON     = "meteorbench.json"
	// FieldSentUnixNano is the JSON field of the send time a feed record
	// and a chat message carry (the protobuf field sent_unix_nano).
	FieldSentUnixNano = "sent_unix_nano"
	// MaxStreamMessages bounds FeedRequest.messages and a chat or upload
	// stream's messages; DefaultStreamMessages is a feed's without one.
	MaxStreamMessages     = 100000
	DefaultStreamMessages = 1000
	// MaxFeedRate bounds FeedRequest.rate (records per second).
	MaxFeedRate = 1e6
	// MaxChatMessageBytes is the largest chat message (a WebSocket frame
	// or a gRPC message) the server reads; a larger one closes a
	// WebSocket with 1009 (message too big), a gRPC stream with
	// RESOURCE_EXHAUSTED.
	MaxChatMessageBytes = 64 << 10
)

// Metric names served at PathMetrics; the load generator scrapes them.
const (
	MetricRequests  = "meteorbench_requests_total"       // {protocol, method}
	MetricErrors    = "meteorbench_request_errors_total" // {protocol, method}
	MetricCPU       = "meteorbench_cpu_seconds_total"    // getrusage user+system
	MetricBuildInfo = "meteorbench_build_info"
	// MetricJSONCodec counts the rest calls by the JSON codec the server
	// encoded and decoded them with.
	MetricJSONCodec = "meteorbench_json_codec_requests_total" // {codec}
	// MetricPeakRSS is the server process's peak resident set since it
	// started (getrusage's maxrss), in bytes.
	MetricPeakRSS = "meteorbench_peak_rss_bytes"
)

// The payload a server serves instead of the meteorites (serve --payload):
// its name and hash ("orders.json@1a2b3c4d5e6f"), on every REST data answer
// and /healthz, and in the header metadata of every gRPC data call. Absent: the
// meteorites. The load generator refuses a target serving another payload
// than its own.
const (
	HeaderPayload   = "X-Meteorbench-Payload"
	MetadataPayload = "meteorbench-payload"
)

// Payload size: how many records the list and stream calls answer. A client
// that names no size gets DefaultRecords, exactly the original contract's
// answer. Records beyond the embedded 1000 are generated from them (see
// internal/data.ID).
const (
	QueryRecords    = "records"             // REST: GET PathList?records=N, GET PathStream?records=N
	MetadataRecords = "meteorbench-records" // gRPC: request metadata on GetLargePayloadAsList and GetLargePayload
	DefaultRecords  = 1000                  // the answer without either
	MaxRecords      = 100000                // the largest N; 1..MaxRecords, else 400 / INVALID_ARGUMENT
)
