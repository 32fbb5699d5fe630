// Package call is the contract between the protocol-agnostic load engine
// and the protocol adapters: a Client per protocol opens counted
// connections, and hands out one Caller per worker for a scenario. A Caller
// makes one complete call — send the request, fully decode the response,
// validate it — and reports a classified error when anything is wrong.
package call

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Caller makes calls of one scenario over one protocol. A Caller belongs to
// one worker and is not safe for concurrent use (so it can keep scratch
// buffers without locks); the Client it came from is shared.
type Caller interface {
	// Call makes one call and returns when its response is fully decoded
	// and validated, or on the first error. The context carries the call's
	// deadline.
	Call(ctx context.Context) (Outcome, error)
}

// DeadlineCaller is a Caller that keeps a call's deadline itself, so that
// the worker makes no context per call (its timer is a cost the lean
// engine saves): ctx is the phase's, ended when the calls in flight must
// end; a call still running at deadline ends as a timeout (deadline zero:
// none). Call(ctx) stays for the callers that have a context per call.
type DeadlineCaller interface {
	Caller
	CallBy(ctx context.Context, deadline time.Time) (Outcome, error)
}

// Outcome is what a successful call reports beyond its latency: where the
// time went, as the adapter saw it from its own start of the call.
//
// Every adapter receives the whole response before decoding it and times
// the decode on its own, so LastByte + Decode is the call's time for every
// protocol alike. Streams are the exception that keeps FirstRecord
// meaningful: they decode each message as it arrives, Decode is the sum over
// the call's messages, and LastByte is the call's time minus that sum (the
// time the call would have taken had decoding been free; the arrival of the
// last byte itself overlaps with decoding earlier messages).
type Outcome struct {
	// FirstRecord is the time from the start of the call to the first
	// decoded record; streaming scenarios only, zero otherwise.
	FirstRecord time.Duration
	// LastByte is the time from the start of the call to the whole
	// response received (see above for streams): for post it includes
	// encoding the request, which grpc-go does inside the call too. Zero
	// when the adapter does not report it.
	LastByte time.Duration
	// Decode is the client's time decoding the response.
	Decode time.Duration
	// Setup is, for a call of a stream scenario (upload, chat, feed) that
	// opened its stream, the time that took (ending the stream before
	// included): recorded on its own (results.KindStreamSetup) and left
	// out of the call's latency, which is then the message's.
	Setup time.Duration
	// Sent, when set, is when the message the call received was sent, by
	// the server's clock (feed: its stamp): the latency is measured from
	// it rather than from the call's start. On one machine the two clocks
	// are one (offset zero); across machines their offset is in it.
	Sent time.Time
	// End, when set, is when the call ended, by a clock read the caller
	// made at its very end anyway (to time its decode): the worker takes
	// it as the call's end rather than read the clock again. Zero: the
	// worker reads it.
	End time.Time
}

// Client is one protocol's connections to the target.
type Client interface {
	// Caller returns a new Caller for a scenario.
	Caller(scenario api.Scenario) (Caller, error)
	// Close closes the client's connections.
	Close() error
}

// Options configure a Client.
type Options struct {
	// Target is the server's host:port.
	Target string
	// Token, when set, is sent as "Bearer <Token>" (REST Authorization
	// header; gRPC authorization metadata).
	Token string
	// Workers is the number of workers that will call concurrently (>= 1).
	Workers int
	// Connections is the number of TCP connections to use; 0 means the
	// protocol's default (gRPC: 1; HTTP/1.1: one per worker).
	Connections int
	// Records is the payload size of the list, stream and post calls
	// (1..api.MaxRecords). 0 names none: the calls are the original
	// contract's and carry api.DefaultRecords. When set, the list and
	// stream calls always name it (?records=N, or the meteorbench-records
	// metadata), 1000 included.
	Records int
	// Messages is the messages per stream of the stream scenarios
	// (upload, chat, feed); 0: api.DefaultStreamMessages.
	Messages int
	// FeedRate is the records a second the feed asks for on each stream;
	// 0: as fast as the client reads.
	FeedRate float64
	// Dialer opens and counts the client's connections. Required.
	Dialer *wire.Dialer
	// Compress is the compression to ask for both ways: "" (none) or
	// CompressGzip.
	Compress string
	// JSONCodec is the JSON library of the JSON client, on both sides
	// (jsoncodec.Names; "" is std); the other clients ignore it.
	JSONCodec string
	// Payload, when set, is what the target serves instead of the
	// meteorites (serve --payload): the calls carry its items, Records of
	// them (0: as many as the sample has), and check them against it.
	Payload *payload.Payload
	// Settings are the cell's value of every dimension declared by its
	// results.Dimensions entry alone (Dimension.Values), by Field, the
	// default's name for the default: what such a dimension asks of the
	// client (an adapter reads the ones it knows).
	Settings map[string]string
}

// The HTTP versions a cell's http_version setting names (results'
// http_version dimension): HTTP11, the default, or HTTP2 (h2c with prior
// knowledge in plaintext; under TLS the dialer must offer ALPN h2: see
// ALPN). They concern the protocols that run over plain HTTP (REST,
// REST+protobuf, gRPC-Web, Connect); gRPC is always HTTP/2.
const (
	SettingHTTPVersion = "http_version"
	HTTP11             = "1.1"
	HTTP2              = "2"
	// HTTP3 is HTTP/3 over QUIC (UDP, on the target's port number),
	// always TLS: the dialer's TLS config, else the system's roots.
	HTTP3 = "3"
)

// Scheme is the URL scheme of o's requests: https for HTTP/3, which
// needs it (QUIC is TLS); http otherwise, also under TLS, where the
// dialer makes the connection TLS.
func Scheme(o Options) string {
	if o.HTTPVersion() == HTTP3 {
		return "https"
	}
	return "http"
}

// HTTPVersion is the HTTP version the options ask for: HTTP11 unless the
// cell's settings name another.
func (o Options) HTTPVersion() string {
	if v := o.Settings[SettingHTTPVersion]; v != "" {
		return v
	}
	return HTTP11
}

// IsHTTP2 reports whether the options ask for HTTP/2.
func (o Options) IsHTTP2() bool { return o.HTTPVersion() == HTTP2 }

// ALPN is the ALPN protocol a client of HTTP version v offers over TLS:
// h2 for HTTP2, http/1.1 otherwise.
func ALPN(v string) []string {
	switch v {
	case HTTP2:
		return []string{"h2"}
	case HTTP3:
		return []string{"h3"}
	}
	return []string{"http/1.1"}
}

// CompressGzip asks for gzip: gRPC per-message gzip, REST Content-Encoding
// gzip on request bodies and Accept-Encoding gzip on GETs.
const CompressGzip = "gzip"

// Validate reports missing or impossible options.
func (o Options) Validate() error {
	if o.Target == "" {
		return errors.New("call: no target")
	}
	if o.Workers < 1 {
		return fmt.Errorf("call: %d workers", o.Workers)
	}
	if o.Connections < 0 {
		return fmt.Errorf("call: %d connections", o.Connections)
	}
	if o.Records < 0 || o.Records > api.MaxRecords {
		return fmt.Errorf("call: %d records, want 1..%d", o.Records, api.MaxRecords)
	}
	if o.Dialer == nil {
		return errors.New("call: no dialer")
	}
	if _, err := jsoncodec.Get(o.JSONCodec); err != nil {
		return fmt.Errorf("call: %w", err)
	}
	if v := o.HTTPVersion(); v != HTTP11 && v != HTTP2 && v != HTTP3 {
		return fmt.Errorf("call: HTTP version %q, want %s, %s or %s", v, HTTP11, HTTP2, HTTP3)
	}
	if o.Compress != "" && o.Compress != CompressGzip {
		return fmt.Errorf("call: unknown compression %q", o.Compress)
	}
	return nil
}

// Error is a call's failure with its class.
type Error struct {
	Class results.ErrorClass
	Err   error
}

// Error implements error.
func (e *Error) Error() string { return string(e.Class) + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Invalid returns an error of class results.ClassInvalid.
func Invalid(format string, args ...any) error {
	return &Error{Class: results.ClassInvalid, Err: fmt.Errorf(format, args...)}
}

// HTTPStatus returns the error for a response with an unexpected status.
func HTTPStatus(code int, detail string) error {
	if detail == "" {
		detail = "status " + strconv.Itoa(code)
	}
	return &Error{Class: results.HTTPClass(code), Err: errors.New(detail)}
}

// GRPCCode returns the error for a gRPC status code other than OK; code is
// the code's name as codes.Code.String spells it (e.g. "Unavailable").
func GRPCCode(code string, err error) error {
	return &Error{Class: results.GRPCClass(code), Err: err}
}

// Classify names the class of a failed call. ctx is the call's context:
// a call whose deadline passed is a timeout and one whose run was cancelled
// is cancelled, whatever error the protocol stack made of it.
func Classify(ctx context.Context, err error) results.ErrorClass {
	if err == nil {
		return ""
	}
	switch ctx.Err() {
	case context.DeadlineExceeded:
		return results.ClassTimeout
	case context.Canceled:
		return results.ClassCancelled
	}
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Class
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return results.ClassTimeout
	}
	if errors.Is(err, context.Canceled) {
		return results.ClassCancelled
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return results.ClassTimeout
	}
	return results.ClassTransport
}

// Records is what a list or stream answer of n records must deliver: the
// ids of data.IDsN(n), in order. Callers get one from Want; it is read-only
// and shared by every caller of the same n.
type Records struct {
	ids []uint32
	n   int
}

// wants caches the expected ids per payload size, built on first use: a
// 100,000-record list is 400 KB of ids, and a run that never asks for it
// never builds it.
var (
	wantsMu sync.Mutex
	wants   = map[int]*Records{}
)

// Want returns the expected answer of n records (n = 0 means
// api.DefaultRecords), built once per n.
func Want(n int) (*Records, error) {
	n = Size(n)
	wantsMu.Lock()
	defer wantsMu.Unlock()
	if w := wants[n]; w != nil {
		return w, nil
	}
	ids, err := data.IDsN(n)
	if err != nil {
		return nil, fmt.Errorf("call: %w", err)
	}
	w := &Records{ids: ids, n: n}
	wants[n] = w
	return w, nil
}

// Size is the payload size a client's calls carry: n, or
// api.DefaultRecords when n is 0 (none named).
func Size(n int) int {
	if n == 0 {
		return api.DefaultRecords
	}
	return n
}

// Expect is an answer of n records checked by their number only: a
// payload's, whose items the adapters check themselves
// (payload.Payload.CheckItem).
func Expect(n int) *Records { return &Records{n: n} }

// PayloadSize is the number of items a payload client's calls carry:
// records, or the sample's own number when 0.
func PayloadSize(p *payload.Payload, records int) int {
	if records == 0 {
		return p.Len()
	}
	return records
}

// Len is the number of records expected.
func (w *Records) Len() int { return w.n }

// CheckID validates the record at index i of a list or stream: it must
// exist in the answer and carry the answer's id at that position.
func (w *Records) CheckID(i int, id uint32) error {
	if i >= len(w.ids) {
		return Invalid("more than %d records", len(w.ids))
	}
	if id != w.ids[i] {
		return Invalid("record %d: id %d, want %d", i, id, w.ids[i])
	}
	return nil
}

// CheckCount validates the number of records of a list or stream.
func (w *Records) CheckCount(n int) error {
	if n != w.n {
		return Invalid("%d records, want %d", n, w.n)
	}
	return nil
}

// CheckMessages validates a list of records: the answer's ids, in order.
func (w *Records) CheckMessages(ms []*pb.MeteoriteLanding) error {
	if err := w.CheckCount(len(ms)); err != nil {
		return err
	}
	for i, m := range ms {
		if err := w.CheckID(i, m.GetId()); err != nil {
			return err
		}
	}
	return nil
}

// CheckString validates a fixed answer such as data.Version or data.Success.
func CheckString(got, want string) error {
	if got != want {
		return Invalid("answer %q, want %q", got, want)
	}
	return nil
}

// Timer measures where a call's time goes: to its first record, to its
// last byte, decoding.
type Timer struct {
	start    time.Time
	first    time.Duration
	lastByte time.Duration
	decode   time.Duration
}

// StartTimer starts timing a call.
func StartTimer() Timer { return Timer{start: time.Now()} }

// Start is when the call started.
func (t *Timer) Start() time.Time { return t.start }

// Record notes a decoded record; only the first one counts.
func (t *Timer) Record() {
	if t.first == 0 {
		t.first = time.Since(t.start)
		if t.first == 0 {
			t.first = 1 // a clock that did not advance still saw a record
		}
	}
}

// Received notes that the whole response has been read, before decoding.
func (t *Timer) Received() { t.ReceivedAt(time.Now()) }

// ReceivedAt is Received with the clock already read.
func (t *Timer) ReceivedAt(now time.Time) { t.lastByte = max(now.Sub(t.start), 1) }

// Decoded adds the time since began (read just before decoding) to the
// call's decode time.
func (t *Timer) Decoded(began time.Time) { t.decode += time.Since(began) }

// AddDecode adds d to the call's decode time (measured elsewhere, e.g. by a
// codec).
func (t *Timer) AddDecode(d time.Duration) { t.decode += d }

// Outcome returns the call's outcome, at its end. Without Received, the
// time to the last byte is the call's time minus its decode time.
func (t *Timer) Outcome() Outcome {
	o := Outcome{FirstRecord: t.first, LastByte: t.lastByte, Decode: t.decode}
	if o.LastByte == 0 {
		o.LastByte = max(time.Since(t.start)-t.decode, 1)
	}
	return o
}
