package lean

// The protocols over plain HTTP besides REST over HTTP/1.1: REST over
// HTTP/2, gRPC-Web and Connect (issue 32), over the lean engine's own
// HTTP/1.1 (http1.go) and HTTP/2 (h2conn.go) clients.
//
//   - The request is built once, as connect-go's client (webcall) sends it
//     (REST's: restcall.Exchange): over HTTP/1.1 its bytes, over HTTP/2
//     its header fields and body.
//   - The answer is read whole, then its status, media type and framing
//     are checked (reply functions below), hard: a frame whose length runs
//     past the body, an unknown flag, a trailer frame that is not last or
//     is missing, malformed trailers or end-of-stream JSON are errors of
//     class protocol; a wrong media type or a compressed message an
//     invalid response; grpc-status other than 0 (in the trailer frame or
//     a trailers-only answer's headers) and Connect's error JSON are
//     "grpc-<Code>" (DeadlineExceeded: a timeout). Nothing is read past
//     the body, which the transports bound (restcall.MaxBody, maxAnswer).
//   - The messages are then verified as gRPC's (grpccheck.go): gRPC-Web's
//     and Connect streaming's data frames are gRPC's length-prefixed
//     messages; a Connect unary answer is one bare message.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/restcall"
	"github.com/meteorbench/meteorbench/internal/loadgen/webcall"
	"github.com/meteorbench/meteorbench/internal/results"
)

// reply is an answer as either client read it, whole.
type reply struct {
	status     int
	typeOK     bool // Content-Type is the media type wanted
	coded      bool // a Content-Encoding other than identity
	grpcStatus int  // in the headers (HTTP/1.1) or headers and trailers (HTTP/2); -1: none
	grpcMsg    string
	body       []byte
}

func replyOf(hd head, body []byte) reply {
	return reply{status: hd.status, typeOK: hd.typeOK, coded: hd.coded, grpcStatus: hd.grpcStatus, grpcMsg: hd.grpcMsg, body: body}
}

// replyOfStream is a finished HTTP/2 stream's answer; an error is the
// stream's own (reset, connection failed). A stream that ended without
// trailers is whole: only gRPC needs them.
func replyOfStream(s *stream) (reply, error) {
	if s.err != nil && !(errors.Is(s.err, errNoTrailers) && s.httpStatus != 0) {
		return reply{}, s.err
	}
	return reply{status: s.httpStatus, typeOK: s.typeOK, coded: s.coded, grpcStatus: s.grpcStatus, grpcMsg: s.grpcMsg, body: s.body}, nil
}

// restReply checks a REST answer: a 200 of media type accept, not
// encoded; its body is what the verifier checks.
func restReply(accept string) func(reply) ([]byte, error) {
	return func(r reply) ([]byte, error) {
		switch {
		case r.status != 200:
			return r.body, call.HTTPStatus(r.status, errorDetail(r.status, r.body))
		case !r.typeOK:
			return r.body, call.Invalid("content type is not %q", accept)
		case r.coded:
			return r.body, call.Invalid("a content coding the lean engine did not ask for")
		}
		return r.body, nil
	}
}

// isMediaType reports whether a Content-Type names the media type want,
// ignoring parameters and case.
func isMediaType(contentType, want string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), want)
}

// webErr is an error of class protocol: the answer's gRPC-Web or Connect
// framing is broken.
func webErr(format string, args ...any) error {
	return &call.Error{Class: results.ClassProtocol, Err: fmt.Errorf(format, args...)}
}

// grpcStatusErr is the error of a gRPC status other than 0, as the
// standard engine classifies it (grpccall.Classify, webcall.Classify).
func grpcStatusErr(code int, msg string) error {
	c := codes.Code(code)
	if c == codes.DeadlineExceeded {
		return &call.Error{Class: results.ClassTimeout, Err: errors.New(msg)}
	}
	return call.GRPCCode(c.String(), fmt.Errorf("rpc error: code = %v desc = %s", c, msg))
}

// Frame flags: gRPC-Web's trailer frame, Connect's end of stream, and the
// compressed flag of both.
const (
	flagCompressed = 0x01
	flagEndStream  = 0x02
	flagTrailer    = 0x80
)

// splitFrames walks the 5-byte-prefixed frames of a gRPC-Web or Connect
// streaming body: data frames (flag 0) first, then exactly one frame of
// flag last (gRPC-Web's trailer, Connect's end of stream), which ends it.
// It returns the data frames' bytes (gRPC's length-prefixed messages, as
// they are), their number and the last frame's payload. A length past the
// body, any other flag, or a missing or early last frame is a protocol
// error; a compressed message, which the client never asks for, an
// invalid response.
func splitFrames(b []byte, last byte) (data []byte, n int, tail []byte, err error) {
	i := 0
	for i < len(b) {
		if len(b)-i < 5 {
			return nil, n, nil, webErr("frame %d: %d bytes of a 5-byte prefix", n, len(b)-i)
		}
		flag := b[i]
		size := int(binary.BigEndian.Uint32(b[i+1 : i+5]))
		if size > len(b)-i-5 {
			return nil, n, nil, webErr("frame %d: length %d, %d bytes left in the body", n, size, len(b)-i-5)
		}
		switch flag {
		case 0:
			n++
			i += 5 + size
		case last:
			if i+5+size != len(b) {
				return nil, n, nil, webErr("frame %d (flag %#x) is not the last: %d bytes follow", n, flag, len(b)-i-5-size)
			}
			return b[:i], n, b[i+5:], nil
		case flagCompressed:
			return nil, n, nil, call.Invalid("frame %d compressed", n)
		default:
			return nil, n, nil, webErr("frame %d: flag %#x", n, flag)
		}
	}
	return nil, n, nil, webErr("no frame of flag %#x after %d data frames", last, n)
}

// parseTrailer parses a gRPC-Web trailer frame's payload, HTTP/1 header
// lines ("grpc-status: 0\r\n"), for grpc-status and grpc-message (kept
// only when the status is not 0: a success allocates nothing); status -1
// when absent. A line without a colon, or a grpc-status that is not a
// number, is a protocol error.
func parseTrailer(b []byte) (status int, msg string, err error) {
	status = -1
	var rawMsg []byte
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 {
			continue
		}
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			return -1, "", webErr("trailer line %q without a colon", clip(line))
		}
		k, v = bytes.TrimSpace(k), bytes.TrimSpace(v)
		switch {
		case equalFold(k, "grpc-status"):
			n, aerr := atoi(v)
			if aerr != nil || n > math.MaxInt32 {
				return -1, "", webErr("grpc-status %q", clip(v))
			}
			status = n
		case equalFold(k, "grpc-message"):
			rawMsg = v
		}
	}
	if status > 0 {
		msg = string(clip(rawMsg))
	}
	return status, msg, nil
}

func clipString(s string) string {
	if len(s) > 64 {
		return s[:64]
	}
	return s
}

// grpcWebReply checks a gRPC-Web answer: a 200 of
// application/grpc-web+proto whose body is data frames and the trailer
// frame, with grpc-status 0 (a trailers-only answer: grpc-status in the
// headers and no body); unary: exactly one message. Its data frames are
// what the verifier checks.
func grpcWebReply(unary bool) func(reply) ([]byte, error) {
	return func(r reply) ([]byte, error) {
		if r.status != 200 {
			if r.grpcStatus > 0 {
				return nil, grpcStatusErr(r.grpcStatus, r.grpcMsg)
			}
			return nil, call.HTTPStatus(r.status, "")
		}
		if !r.typeOK {
			return nil, call.Invalid("content type is not %q", typeGRPCWeb)
		}
		if r.coded {
			return nil, call.Invalid("a content coding the lean engine did not ask for")
		}
		if len(r.body) == 0 && r.grpcStatus != -1 { // trailers-only
			if r.grpcStatus < 0 {
				return nil, webErr("grpc-status in the headers is not a number")
			}
			if r.grpcStatus > 0 {
				return nil, grpcStatusErr(r.grpcStatus, r.grpcMsg)
			}
			return nil, call.Invalid("no message")
		}
		data, n, tail, err := splitFrames(r.body, flagTrailer)
		if err != nil {
			return nil, err
		}
		status, msg, err := parseTrailer(tail)
		switch {
		case err != nil:
			return nil, err
		case status < 0:
			return nil, webErr("trailer frame without grpc-status")
		case status > 0:
			return nil, grpcStatusErr(status, msg)
		case unary && n != 1:
			return nil, call.Invalid("%d messages, want 1", n)
		}
		return data, nil
	}
}

// connectError is Connect's error JSON: a unary answer's body, or an end
// of stream's "error".
type connectError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// err is the error's class: "grpc-<Code>" by its code's name
// (connect.Code's spelling, "resource_exhausted"); an unknown name is
// Unknown, as connect-go reads it.
func (e *connectError) err() error {
	var c connect.Code
	if c.UnmarshalText([]byte(e.Code)) != nil {
		c = connect.CodeUnknown
	}
	return grpcStatusErr(int(c), clipString(e.Message))
}

// connectUnaryReply checks a Connect unary answer: a 200 of
// application/proto whose body is the message, which the verifier checks
// (framed as gRPC's: the checks are the same); any other status with
// Connect's error JSON is its code's class, without it the HTTP status's.
func connectUnaryReply(framed []byte) func(reply) ([]byte, error) {
	return func(r reply) ([]byte, error) {
		if r.status != 200 {
			var e connectError
			if json.Unmarshal(r.body, &e) == nil && e.Code != "" {
				return nil, e.err()
			}
			return nil, call.HTTPStatus(r.status, "")
		}
		if !r.typeOK {
			return nil, call.Invalid("content type is not %q", typeConnectUnary)
		}
		if r.coded {
			return nil, call.Invalid("a content coding the lean engine did not ask for")
		}
		// The verifier takes gRPC's framing: the message, prefixed (in
		// a buffer of the caller's, grown once).
		framed = binary.BigEndian.AppendUint32(append(framed[:0], 0), uint32(len(r.body)))
		framed = append(framed, r.body...)
		return framed, nil
	}
}

// connectStreamReply checks a Connect streaming answer: a 200 of
// application/connect+proto whose body is data frames and the end-of-stream
// frame, whose JSON carries no error. Its data frames are what the
// verifier checks.
func connectStreamReply(r reply) ([]byte, error) {
	if r.status != 200 {
		return nil, call.HTTPStatus(r.status, "")
	}
	if !r.typeOK {
		return nil, call.Invalid("content type is not %q", typeConnectStream)
	}
	if r.coded {
		return nil, call.Invalid("a content coding the lean engine did not ask for")
	}
	data, _, tail, err := splitFrames(r.body, flagEndStream)
	if err != nil {
		return nil, err
	}
	if string(tail) == "{}" { // a success without trailers: nothing to decode
		return data, nil
	}
	var end struct {
		Error *connectError `json:"error"`
	}
	if err := json.Unmarshal(tail, &end); err != nil {
		return nil, webErr("end of stream: %v", err)
	}
	if end.Error != nil {
		return nil, end.Error.err()
	}
	return data, nil
}

// The media types of the web protocols (protobuf bodies).
const (
	typeGRPCWeb       = "application/grpc-web+proto"
	typeConnectUnary  = "application/proto"
	typeConnectStream = "application/connect+proto"
)

// webRequest is a scenario's call of a web protocol (or REST over
// HTTP/2), built once.
type webRequest struct {
	method, path string
	header       http.Header
	body         []byte
	accept       string
	unary        bool // the answer is one gRPC-framed message (gRPC-Web's unary calls)
	// check decodes and validates what reply returns.
	check func([]byte) error
	reply func(reply) ([]byte, error)
}

// newWebRequest is scenario's call of protocol (webcall.GRPCWeb or
// webcall.Connect) under o: the request connect-go's client sends
// (webcall), the answer's checks.
func newWebRequest(protocol api.Protocol, scenario api.Scenario, o call.Options) (*webRequest, error) {
	if o.Payload != nil {
		return nil, fmt.Errorf("lean: %s does not carry a user's payload (--payload) yet", protocol)
	}
	path := grpcPath(scenario, false)
	if path == "" {
		return nil, fmt.Errorf("lean: unknown scenario %q", scenario)
	}
	msg, check, err := grpcRequest(scenario, o)
	if err != nil {
		return nil, fmt.Errorf("lean: %w", err)
	}
	framed := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg)))
	framed = append(framed, msg...)
	w := &webRequest{method: http.MethodPost, path: path, header: http.Header{}, check: check}
	if o.Token != "" {
		w.header.Set("Authorization", "Bearer "+o.Token)
	}
	if o.Records != 0 && (scenario == api.Large || scenario == api.Stream) {
		w.header.Set(api.MetadataRecords, strconv.Itoa(o.Records))
	}
	unary := scenario != api.Stream
	switch {
	case protocol == webcall.GRPCWeb:
		w.accept, w.body, w.unary, w.reply = typeGRPCWeb, framed, unary, grpcWebReply(unary)
		w.header.Set("Content-Type", typeGRPCWeb)
		w.header.Set("User-Agent", grpcWebUserAgent)
		w.header.Set("X-User-Agent", grpcWebUserAgent)
	case protocol == webcall.Connect && unary:
		w.accept, w.body, w.reply = typeConnectUnary, msg, connectUnaryReply(nil)
		w.header.Set("Content-Type", typeConnectUnary)
		w.header.Set("Connect-Protocol-Version", "1")
		w.header.Set("User-Agent", connectUserAgent)
	case protocol == webcall.Connect:
		w.accept, w.body, w.reply = typeConnectStream, framed, connectStreamReply
		w.header.Set("Content-Type", typeConnectStream)
		w.header.Set("Connect-Protocol-Version", "1")
		w.header.Set("User-Agent", connectUserAgent)
	default:
		return nil, fmt.Errorf("lean: unknown protocol %q", protocol)
	}
	w.header.Set("Accept-Encoding", "identity") // as connect-go's client asks: no compression
	return w, nil
}

// The User-Agent of connect-go's client, by protocol. The other headers it
// sends are sent as it sends them, but the timeout (grpc-timeout,
// connect-timeout-ms): the lean client keeps the deadline itself, as its
// gRPC client does.
var (
	grpcWebUserAgent = fmt.Sprintf("grpc-go-connect/%s (%s)", connect.Version, runtime.Version())
	connectUserAgent = fmt.Sprintf("connect-go/%s (%s)", connect.Version, runtime.Version())
)

// restWebRequest is REST's call (restcall.Exchange) as a webRequest, for
// HTTP/2.
func restWebRequest(ex *restcall.Exchange) *webRequest {
	h := ex.Header.Clone()
	h.Set("User-Agent", "Go-http-client/2.0")
	return &webRequest{method: ex.Method, path: ex.Path, header: h, body: ex.Body, accept: ex.Accept,
		check: ex.Check, reply: restReply(ex.Accept)}
}

// serialise is the request as HTTP/1.1 writes it to target.
func (w *webRequest) serialise(target string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", w.method, w.path, target)
	w.header.Write(&b)
	if w.method != http.MethodGet {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(w.body))
	}
	b.WriteString("\r\n")
	b.Write(w.body)
	return []byte(b.String())
}

// h2method is the request as HTTP/2 sends it to target, under scheme.
func (w *webRequest) h2method(target, scheme string) *method {
	m := &method{msg: w.body, unary: w.unary, accept: w.accept, noBody: w.method == http.MethodGet, fields: []hpack.HeaderField{
		{Name: ":method", Value: w.method}, {Name: ":scheme", Value: scheme},
		{Name: ":path", Value: w.path}, {Name: ":authority", Value: target},
	}}
	for k, vs := range w.header {
		for _, v := range vs {
			m.fields = append(m.fields, hpack.HeaderField{Name: strings.ToLower(k), Value: v})
		}
	}
	if !m.noBody {
		m.fields = append(m.fields, hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(len(w.body))})
	}
	return m
}

// webH2Client is the lean client of REST, gRPC-Web or Connect over
// HTTP/2: the gRPC client's connections (Connections, default 1, every
// caller's streams multiplexed over them round-robin), its callers'
// requests and checks the protocol's.
type webH2Client struct {
	*grpcClient
	protocol api.Protocol
}

// Caller implements call.Client.
func (c *webH2Client) Caller(scenario api.Scenario) (call.Caller, error) {
	w, err := c.request(scenario)
	if err != nil {
		return nil, err
	}
	a := c.newCaller(w.h2method(c.o.Target, scheme(c.o)))
	a.ans = func(s *stream) ([]byte, error) {
		r, err := replyOfStream(s)
		if err != nil {
			return nil, err
		}
		return w.reply(r)
	}
	return checked(a, w.check, c.born), nil
}

func (c *webH2Client) request(scenario api.Scenario) (*webRequest, error) {
	if c.protocol == api.REST || c.protocol == api.RESTProtobuf {
		ex, err := restcall.NewExchange(c.o, c.protocol, scenario)
		if err != nil {
			return nil, err
		}
		return restWebRequest(ex), nil
	}
	return newWebRequest(c.protocol, scenario, c.o)
}

// webH1Client is the lean client of gRPC-Web or Connect over HTTP/1.1:
// the REST client's connections (one per caller).
type webH1Client struct {
	*restClient
}

// Caller implements call.Client.
func (c *webH1Client) Caller(scenario api.Scenario) (call.Caller, error) {
	w, err := newWebRequest(c.protocol, scenario, c.o)
	if err != nil {
		return nil, err
	}
	return checked(c.newCaller(w.serialise(c.o.Target), w.accept, w.reply), w.check, c.born), nil
}
