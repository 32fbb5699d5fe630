package data

// The JSON shapes of the streams both ways (issue 42) in the REST world:
// WebSocket text frames, Server-Sent Events and NDJSON uploads. They are
// the protobuf messages' (api/meteor.proto) with the JSON field names the
// other routes use.

// ChatText is the text of every chat message the load generator sends,
// whatever the protocol: a short line, as chat is.
const ChatText = "Meteorite sighted over the north ridge, bright green trail"

// ChatMessage is one chat message either way: the sender's sequence
// number and send time (nanoseconds since the Unix epoch), which the
// answer carries back, and its text.
type ChatMessage struct {
	Seq          uint64 `json:"seq"`
	SentUnixNano int64  `json:"sent_unix_nano"`
	Text         string `json:"text"`
}

// FeedRecord is one record of the feed: the record as the other routes
// write it, and the server's send time.
type FeedRecord struct {
	Landing
	SentUnixNano int64 `json:"sent_unix_nano"`
}
