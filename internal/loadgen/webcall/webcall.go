// Package webcall holds the adapters of the web protocols (issue 32):
// gRPC-Web (protocol "grpc-web": binary gRPC-Web, application/grpc-web+proto)
// and Connect (protocol "connect": unary calls as POSTs of
// application/proto, the stream as application/connect+proto), over
// HTTP/1.1 or HTTP/2 (call.Options.HTTPVersion), through connect-go's
// generic client (connectrpc.com/connect), one small Caller per scenario;
// and gRPC over HTTP/3 (connect-go's gRPC protocol over quic-go's http3:
// grpc-go has no HTTP/3), for the contract's small, large, stream and post
// calls.
//
// They keep the other adapters' contract: the connections are restcall's
// transports over the counted dialer (HTTP/1.1: one per worker; HTTP/2:
// the gRPC client's policy, Connections connections, default 1), every
// answer is fully decoded (by a timed codec, as grpccall's) and validated
// by the call package's checks, and every failure is classified: a status
// the server sent (grpc-status, Connect's error JSON) is "grpc-<Code>", a
// wrong content type an invalid response, broken framing (a bad flag, a
// truncated message, trailers without grpc-status) a protocol error, a
// failed connection a transport error.
package webcall

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/grpccall"
	"github.com/meteorbench/meteorbench/internal/loadgen/restcall"
	"github.com/meteorbench/meteorbench/internal/results"
)

// The protocols' names, as --proto spells them (issue 32). They belong in
// api.Protocol's list once the lead wires them.
const (
	GRPCWeb api.Protocol = "grpc-web"
	Connect api.Protocol = "connect"
)

// Protocols are the protocols of this package.
func Protocols() []api.Protocol { return []api.Protocol{GRPCWeb, Connect} }

// Client is a gRPC-Web or Connect client.
type Client struct {
	protocol  api.Protocol
	http      *http.Client
	closeIdle func()
	base      string
	opts      []connect.ClientOption
	auth      string
	records   int
	// The stream scenarios' (streams.go): messages per stream, the
	// feed's rate, the HTTP version.
	messages    int
	feedRate    float64
	httpVersion string
	streamsCtx  context.Context // ends the streams still open at Close
	endStreams  context.CancelFunc
}

// NewClient opens a client of protocol (GRPCWeb or Connect; api.GRPC,
// meant for HTTP/3, with connect-go's gRPC protocol) under o.
// The user's payload (o.Payload) is not served over the web protocols
// yet: asking for it is an error.
func NewClient(protocol api.Protocol, o call.Options) (*Client, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Payload != nil {
		return nil, fmt.Errorf("webcall: %s does not carry a user's payload (--payload) yet", protocol)
	}
	var opts []connect.ClientOption
	switch protocol {
	case GRPCWeb:
		opts = append(opts, connect.WithGRPCWeb())
	case Connect:
		// connect-go's default protocol; protobuf bodies (no WithProtoJSON).
	case api.GRPC:
		opts = append(opts, connect.WithGRPC())
	default:
		return nil, fmt.Errorf("webcall: unknown protocol %q", protocol)
	}
	opts = append(opts, connect.WithReadMaxBytes(grpccall.MaxRecvMsgSize))
	if o.Compress == call.CompressGzip {
		opts = append(opts, connect.WithSendGzip()) // per message; gzip answers accepted (connect-go's default)
	} else {
		// connect-go's client accepts gzip answers by default, and its
		// server then gzips them: no compression unless asked for, as the
		// other protocols.
		opts = append(opts, connect.WithAcceptCompression("gzip", nil, nil))
	}
	rt, closeIdle := restcall.RoundTripper(o)
	c := &Client{
		protocol: protocol, http: &http.Client{Transport: rt}, closeIdle: closeIdle,
		base: call.Scheme(o) + "://" + o.Target, opts: opts, records: o.Records,
		messages: o.MessagesPer(), feedRate: o.FeedRate, httpVersion: o.HTTPVersion(),
	}
	c.streamsCtx, c.endStreams = context.WithCancel(context.Background())
	if o.Token != "" {
		c.auth = "Bearer " + o.Token
	}
	return c, nil
}

// Close implements call.Client.
func (c *Client) Close() error {
	c.endStreams()
	c.closeIdle()
	return nil
}

// Caller implements call.Client.
func (c *Client) Caller(scenario api.Scenario) (call.Caller, error) {
	codec := &timingCodec{}
	opts := append(c.opts[:len(c.opts):len(c.opts)], connect.WithCodec(codec))
	a := caller{codec: codec, header: http.Header{}}
	if c.auth != "" {
		a.header.Set("Authorization", c.auth)
	}
	listHeader := a.header
	if c.records != 0 {
		listHeader = a.header.Clone()
		listHeader.Set(api.MetadataRecords, strconv.Itoa(c.records))
	}
	url := func(method string) string { return c.base + method }
	switch scenario {
	case api.Small:
		return &unary[pb.EmptyRequest, pb.Version]{a, connect.NewClient[pb.EmptyRequest, pb.Version](c.http, url(pb.MeteoriteLandingsService_GetVersion_FullMethodName), opts...),
			empty, func(v *pb.Version) error { return call.CheckString(v.GetApiVersion(), data.Version) }}, nil
	case api.Large, api.Stream:
		want, err := call.Want(c.records)
		if err != nil {
			return nil, fmt.Errorf("webcall: %w", err)
		}
		a.header = listHeader
		if scenario == api.Large {
			return &unary[pb.EmptyRequest, pb.MeteoriteLandingList]{a, connect.NewClient[pb.EmptyRequest, pb.MeteoriteLandingList](c.http, url(pb.MeteoriteLandingsService_GetLargePayloadAsList_FullMethodName), opts...),
				empty, func(l *pb.MeteoriteLandingList) error { return want.CheckMessages(l.GetMeteoriteLandings()) }}, nil
		}
		return &stream{a, connect.NewClient[pb.EmptyRequest, pb.MeteoriteLanding](c.http, url(pb.MeteoriteLandingsService_GetLargePayload_FullMethodName), opts...), want}, nil
	case api.Post:
		ls, err := data.LandingsN(call.Size(c.records))
		if err != nil {
			return nil, fmt.Errorf("webcall: %w", err)
		}
		return &unary[pb.MeteoriteLandingList, pb.StatusResponse]{a, connect.NewClient[pb.MeteoriteLandingList, pb.StatusResponse](c.http, url(pb.MeteoriteLandingsService_PostLargePayload_FullMethodName), opts...),
			data.ProtoList(ls), func(st *pb.StatusResponse) error { return call.CheckString(st.GetStatus(), data.Success) }}, nil
	}
	if scenario.IsStream() {
		return c.streamCaller(scenario, a, opts, url) // streams.go
	}
	return nil, fmt.Errorf("webcall: unknown scenario %q", scenario)
}

// timingCodec is connect-go's protobuf codec ("proto"), timing Unmarshal:
// connect-go reads a whole message before it unmarshals it, so the call's
// time minus the decode time is its time to the last byte, as with
// grpccall.TimingCodec. Each Caller has its own.
type timingCodec struct {
	grpccall.DecodeTime
}

// Name implements connect.Codec: "proto", so the content types are
// application/grpc-web+proto, application/proto, application/connect+proto.
func (*timingCodec) Name() string { return "proto" }

// Marshal implements connect.Codec.
func (*timingCodec) Marshal(m any) ([]byte, error) { return proto.Marshal(m.(proto.Message)) }

// MarshalAppend appends m's encoding to dst (connect-go's buffer reuse).
func (*timingCodec) MarshalAppend(dst []byte, m any) ([]byte, error) {
	return proto.MarshalOptions{}.MarshalAppend(dst, m.(proto.Message))
}

// Unmarshal implements connect.Codec.
func (c *timingCodec) Unmarshal(b []byte, m any) error {
	t0 := time.Now()
	err := proto.Unmarshal(b, m.(proto.Message))
	c.Decode += time.Since(t0)
	return err
}

// caller is what every scenario's Caller shares.
type caller struct {
	codec  *timingCodec
	header http.Header // sent on every call (read-only)
}

// request is a request of m with the caller's header.
func request[T any](a *caller, m *T) *connect.Request[T] {
	r := connect.NewRequest(m)
	for k, v := range a.header {
		r.Header()[k] = v
	}
	return r
}

var empty = &pb.EmptyRequest{}

// unary is a unary scenario: small (GetVersion -> "API Version 1.0"),
// large (GetLargePayloadAsList -> the records in one message) or post
// (PostLargePayload with the records -> "SUCCESS"), its answer validated
// by check.
type unary[Req, Res any] struct {
	caller
	c     *connect.Client[Req, Res]
	msg   *Req
	check func(*Res) error
}

func (a *unary[Req, Res]) Call(ctx context.Context) (call.Outcome, error) {
	timer := a.codec.Start()
	res, err := a.c.CallUnary(ctx, request(&a.caller, a.msg))
	if err != nil {
		return call.Outcome{}, Classify(err)
	}
	return a.codec.Outcome(&timer), a.check(res.Msg)
}

// stream: GetLargePayload -> one message per record, decoded and checked
// as they arrive.
type stream struct {
	caller
	c    *connect.Client[pb.EmptyRequest, pb.MeteoriteLanding]
	want *call.Records
}

func (a *stream) Call(ctx context.Context) (call.Outcome, error) {
	timer := a.codec.Start()
	ctx, cancel := context.WithCancel(ctx) // ends the stream on an early return
	defer cancel()
	st, err := a.c.CallServerStream(ctx, request(&a.caller, empty))
	if err != nil {
		return call.Outcome{}, Classify(err)
	}
	defer st.Close()
	n := 0
	for ; st.Receive(); n++ {
		timer.Record()
		if err := a.want.CheckID(n, st.Msg().GetId()); err != nil {
			return call.Outcome{}, err
		}
	}
	if err := st.Err(); err != nil {
		return call.Outcome{}, Classify(err)
	}
	return a.codec.Outcome(&timer), a.want.CheckCount(n)
}

// Classify gives a connect-go error its class:
//   - a status the server sent (connect.IsWireError: grpc-status in the
//     headers or trailers, Connect's error JSON or end-of-stream error):
//     "grpc-<Code>" with gRPC's spelling of the code (the codes are the
//     same numbers), or a timeout for DeadlineExceeded;
//   - an answer connect-go refused: a non-200 HTTP status without a
//     Connect error is "http-<status>"; a wrong content type an invalid
//     response; framing connect-go calls a protocol error (a bad flag, a
//     message shorter than its prefix, trailers without grpc-status or
//     malformed) is of class protocol. connect-go types none of these, so
//     its messages are read;
//   - anything else (the connection failed) keeps its cause, for
//     call.Classify (transport, or a timeout); a cancellation is left to
//     call.Classify, which reads the call's context.
func Classify(err error) error {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return err
	}
	code := ce.Code()
	switch {
	case code == connect.CodeCanceled:
		return err
	case code == connect.CodeDeadlineExceeded:
		return &call.Error{Class: results.ClassTimeout, Err: err}
	case connect.IsWireError(err):
		return call.GRPCCode(codes.Code(code).String(), err)
	}
	msg := ce.Message()
	switch {
	case httpStatus(msg) != 0:
		return call.HTTPStatus(httpStatus(msg), msg)
	case strings.Contains(msg, "invalid content-type"):
		return call.Invalid("%v", err)
	case strings.Contains(msg, "protocol error"), strings.Contains(msg, "corrupt response"),
		strings.Contains(msg, "trailers invalid"), strings.Contains(msg, "unmarshal web trailers"),
		strings.Contains(msg, "unmarshal end stream"):
		return &call.Error{Class: results.ClassProtocol, Err: err}
	case strings.HasPrefix(msg, "unmarshal message"):
		return call.Invalid("%v", err)
	case code == connect.CodeResourceExhausted:
		return call.Invalid("%v", err) // an answer over the size the client takes
	}
	if cause := errors.Unwrap(ce); cause != nil {
		return cause
	}
	return err
}

// httpStatus is the HTTP status connect-go names in the message of an
// answer it refused for its status ("HTTP status 503 Service
// Unavailable", or a Connect unary error without its JSON: "503 Service
// Unavailable"); 0 when the message names none.
func httpStatus(msg string) int {
	msg = strings.TrimPrefix(msg, "HTTP status ")
	if len(msg) < 4 || msg[3] != ' ' {
		return 0
	}
	n, err := strconv.Atoi(msg[:3])
	if err != nil || n < 100 {
		return 0
	}
	return n
}
