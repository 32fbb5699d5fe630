// Package grpccall holds the gRPC adapters, one small Caller per scenario,
// over N ClientConns (one TCP connection each) shared round-robin.
package grpccall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/meteorbench/meteorbench/api"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/gzip"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/payload"
)

// MaxRecvMsgSize is the largest response message accepted. grpc-go's
// default, 4 MiB, is below the largest list the contract allows: 1000
// records are about 100 KB and api.MaxRecords (100,000) about 10 MB, so the
// limit is set deliberately, with room to spare, to 128 MiB. (The send side
// is unlimited in grpc-go; the server's --max-body bounds uploads.)
const MaxRecvMsgSize = 128 << 20

// Client is the "grpc" client.
type Client struct {
	conns   []*grpc.ClientConn
	stubs   []pb.MeteoriteLandingsServiceClient
	next    atomic.Uint64
	records int              // call.Options.Records
	payload *payload.Payload // call.Options.Payload (payload.go)
	// The stream scenarios' (streams.go): messages per stream, the feed's rate.
	messages int
	feedRate float64
}

// New opens Connections ClientConns (default 1) to the target and starts
// connecting them.
func New(o call.Options) (*Client, error) {
	conns, err := Dial(o)
	if err != nil {
		return nil, err
	}
	c := &Client{records: o.Records, conns: conns, payload: o.Payload, messages: o.MessagesPer(), feedRate: o.FeedRate}
	for _, cc := range conns {
		c.stubs = append(c.stubs, pb.NewMeteoriteLandingsServiceClient(cc))
	}
	return c, nil
}

// Dial opens Connections ClientConns (default 1) to o.Target over o's
// counted dialer, with o's compression and token, and starts connecting
// them: the connections of every gRPC client, the contract's and a user's
// own method's (endpointcall) alike.
func Dial(o call.Options) ([]*grpc.ClientConn, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	n := o.Connections
	if n == 0 {
		n = 1
	}
	callOpts := []grpc.CallOption{grpc.MaxCallRecvMsgSize(MaxRecvMsgSize)}
	if o.Compress == call.CompressGzip {
		// Per-message gzip both ways: the server answers in the
		// compressor the request came in. grpc-go inflates a message
		// before the codec sees it, so Decode (the codec's time) leaves
		// inflating out, as the REST adapters do.
		callOpts = append(callOpts, grpc.UseCompressor(gzip.Name))
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(o.Dialer.DialTCP),
		grpc.WithDefaultCallOptions(callOpts...),
	}
	if o.Token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{"authorization": "Bearer " + o.Token}))
	}
	var conns []*grpc.ClientConn
	for range n {
		cc, err := grpc.NewClient("passthrough:///"+o.Target, opts...)
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, fmt.Errorf("grpccall: %w", err)
		}
		cc.Connect()
		conns = append(conns, cc)
	}
	return conns, nil
}

// bearer is the authorization metadata, built once and sent on every call
// (grpc-go only reads the map).
type bearer map[string]string

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return b, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials: the
// token goes over the plaintext connection, as the REST clients send it.
func (bearer) RequireTransportSecurity() bool { return false }

// Close implements call.Client.
func (c *Client) Close() error {
	var errs []error
	for _, cc := range c.conns {
		errs = append(errs, cc.Close())
	}
	return errors.Join(errs...)
}

// stub picks the next connection, round-robin across all callers.
func (c *Client) stub() pb.MeteoriteLandingsServiceClient {
	if len(c.stubs) == 1 {
		return c.stubs[0]
	}
	return c.stubs[c.next.Add(1)%uint64(len(c.stubs))]
}

// TimingCodec is grpc-go's proto codec, timing Unmarshal. grpc-go reads a
// whole message before it unmarshals it, so the call's time minus the
// decode time is its time to the last byte. Each Caller has its own (a
// Caller is used by one goroutine, and grpc-go unmarshals in the calling
// goroutine), so the sum needs no lock.
type TimingCodec struct {
	encoding.CodecV2
	DecodeTime
}

// Name is empty, so that the calls' content type is application/grpc, as
// a grpc-go client with its default codec sends it: grpc.ForceCodecV2
// makes a codec's name the content-subtype (application/grpc+proto), and
// the server echoes it. That was six bytes more than the lean engine's
// request and answer a call through a proxy that sends every header as a
// literal (HAProxy: 191 against 185 B received a small call).
func (c *TimingCodec) Name() string { return "" }

// DecodeTime is the time a caller's codec spent in Unmarshal since the
// call began (the codecs of grpccall and webcall time their calls alike).
type DecodeTime struct {
	// Decode is the time spent in Unmarshal since it was last zeroed.
	Decode time.Duration
}

// Start begins timing a call: the decode time starts again from zero.
func (d *DecodeTime) Start() call.Timer {
	d.Decode = 0
	return call.StartTimer()
}

// Outcome ends timing a call, with its decode time.
func (d *DecodeTime) Outcome(t *call.Timer) call.Outcome {
	t.AddDecode(d.Decode)
	return t.Outcome()
}

// NewTimingCodec is grpc-go's proto codec, timed; force it on a caller's
// calls with grpc.ForceCodecV2.
func NewTimingCodec() *TimingCodec {
	// payload.Codec: the payload's messages by its compiled codec, the
	// contract's (and everything else) by grpc-go's proto codec.
	return &TimingCodec{CodecV2: payload.NewCodec(encoding.GetCodecV2(grpcproto.Name))}
}

// Unmarshal implements encoding.CodecV2.
func (c *TimingCodec) Unmarshal(data mem.BufferSlice, v any) error {
	t0 := time.Now()
	err := c.CodecV2.Unmarshal(data, v)
	c.Decode += time.Since(t0)
	return err
}

// caller is what every scenario's Caller shares: the client and a timing
// codec forced on its calls.
type caller struct {
	c     *Client
	codec *TimingCodec
	opts  []grpc.CallOption
}

func newCaller(c *Client) caller {
	codec := NewTimingCodec()
	return caller{c: c, codec: codec, opts: []grpc.CallOption{grpc.ForceCodecV2(codec)}}
}

// newListCaller is newCaller for the calls that answer records (list and
// stream): when the client names a payload size, every call carries the
// meteorbench-records metadata, built here once per caller and attached as
// a per-call credential (grpc-go only reads its map), so no call builds a
// new context or metadata.
func newListCaller(c *Client) (caller, *call.Records, error) {
	a := newCaller(c)
	want, err := call.Want(c.records)
	if err != nil {
		return caller{}, nil, err
	}
	if c.records != 0 {
		a.opts = append(a.opts, grpc.PerRPCCredentials(bearer{api.MetadataRecords: strconv.Itoa(c.records)}))
	}
	return a, want, nil
}

// Caller implements call.Client.
func (c *Client) Caller(scenario api.Scenario) (call.Caller, error) {
	if scenario.IsStream() {
		return c.streamCaller(scenario) // streams.go
	}
	if c.payload != nil {
		return c.payloadCaller(scenario) // payload.go
	}
	switch scenario {
	case api.Small:
		return &small{newCaller(c)}, nil
	case api.Large, api.Stream:
		a, want, err := newListCaller(c)
		if err != nil {
			return nil, fmt.Errorf("grpccall: %w", err)
		}
		if scenario == api.Large {
			return &large{a, want}, nil
		}
		return &stream{a, want}, nil
	case api.Post:
		ls, err := data.LandingsN(call.Size(c.records))
		if err != nil {
			return nil, fmt.Errorf("grpccall: %w", err)
		}
		return &post{caller: newCaller(c), list: data.ProtoList(ls)}, nil
	}
	return nil, fmt.Errorf("grpccall: unknown scenario %q", scenario)
}

// Classify wraps a gRPC status error with its class (call.GRPCStatus).
func Classify(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	return call.GRPCStatus(st.Code(), err)
}

var empty = &pb.EmptyRequest{}

// small: GetVersion -> "API Version 1.0".
type small struct{ caller }

func (a *small) Call(ctx context.Context) (call.Outcome, error) {
	timer := a.codec.Start()
	v, err := a.c.stub().GetVersion(ctx, empty, a.opts...)
	if err != nil {
		return call.Outcome{}, Classify(err)
	}
	return a.codec.Outcome(&timer), call.CheckString(v.GetApiVersion(), data.Version)
}

// large: GetLargePayloadAsList -> the records (1000 unless named) in one message.
type large struct {
	caller
	want *call.Records
}

func (a *large) Call(ctx context.Context) (call.Outcome, error) {
	timer := a.codec.Start()
	list, err := a.c.stub().GetLargePayloadAsList(ctx, empty, a.opts...)
	if err != nil {
		return call.Outcome{}, Classify(err)
	}
	return a.codec.Outcome(&timer), a.want.CheckMessages(list.GetMeteoriteLandings())
}

// stream: GetLargePayload -> one message per record (1000 unless named),
// decoded as they arrive; the decode time is the sum over the messages.
type stream struct {
	caller
	want *call.Records
}

func (a *stream) Call(ctx context.Context) (call.Outcome, error) {
	timer := a.codec.Start()
	ctx, cancel := context.WithCancel(ctx) // ends the stream on an early return
	defer cancel()
	st, err := a.c.stub().GetLargePayload(ctx, empty, a.opts...)
	if err != nil {
		return call.Outcome{}, Classify(err)
	}
	var m *pb.MeteoriteLanding
	n, err := receive(&timer, func() (err error) { m, err = st.Recv(); return err },
		func(n int) error { return a.want.CheckID(n, m.GetId()) })
	if err != nil {
		return call.Outcome{}, err
	}
	return a.codec.Outcome(&timer), a.want.CheckCount(n)
}

// receive reads a stream's messages with recv until its end, checking
// each (the n-th) as it arrives, and returns their number.
func receive(timer *call.Timer, recv func() error, check func(n int) error) (int, error) {
	for n := 0; ; n++ {
		err := recv()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, Classify(err)
		}
		timer.Record()
		if err := check(n); err != nil {
			return n, err
		}
	}
}

// post: PostLargePayload with the records (1000 unless named; marshalled by
// grpc-go per call) -> "SUCCESS".
type post struct {
	caller
	list *pb.MeteoriteLandingList
}

func (a *post) Call(ctx context.Context) (call.Outcome, error) {
	timer := a.codec.Start()
	st, err := a.c.stub().PostLargePayload(ctx, a.list, a.opts...)
	if err != nil {
		return call.Outcome{}, Classify(err)
	}
	return a.codec.Outcome(&timer), call.CheckString(st.GetStatus(), data.Success)
}
