// Package grpccall holds the gRPC adapters, one small Caller per scenario,
// over N ClientConns (one TCP connection each) shared round-robin.
package grpccall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/meteorbench/meteorbench/api"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/gzip"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// MaxRecvMsgSize is the largest response message accepted (the list is
// about 100 KB; grpc-go's default limit is 4 MiB).
const MaxRecvMsgSize = 16 << 20

// Client is the "grpc" client.
type Client struct {
	conns []*grpc.ClientConn
	stubs []pb.MeteoriteLandingsServiceClient
	next  atomic.Uint64
}

// New opens Connections ClientConns (default 1) to the target and starts
// connecting them.
func New(o call.Options) (*Client, error) {
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
	c := &Client{}
	for range n {
		cc, err := grpc.NewClient("passthrough:///"+o.Target, opts...)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("grpccall: %w", err)
		}
		cc.Connect()
		c.conns = append(c.conns, cc)
		c.stubs = append(c.stubs, pb.NewMeteoriteLandingsServiceClient(cc))
	}
	return c, nil
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

// timingCodec is grpc-go's proto codec, timing Unmarshal. grpc-go reads a
// whole message before it unmarshals it, so the call's time minus the
// decode time is its time to the last byte. Each Caller has its own (a
// Caller is used by one goroutine, and grpc-go unmarshals in the calling
// goroutine), so the sum needs no lock.
type timingCodec struct {
	encoding.CodecV2 // Name() is "proto": the content type is unchanged
	decode           time.Duration
}

// Unmarshal implements encoding.CodecV2.
func (c *timingCodec) Unmarshal(data mem.BufferSlice, v any) error {
	t0 := time.Now()
	err := c.CodecV2.Unmarshal(data, v)
	c.decode += time.Since(t0)
	return err
}

// caller is what every scenario's Caller shares: the client and a timing
// codec forced on its calls.
type caller struct {
	c     *Client
	codec *timingCodec
	opts  []grpc.CallOption
}

func newCaller(c *Client) caller {
	codec := &timingCodec{CodecV2: encoding.GetCodecV2(grpcproto.Name)}
	return caller{c: c, codec: codec, opts: []grpc.CallOption{grpc.ForceCodecV2(codec)}}
}

// start begins timing a call.
func (a *caller) start() call.Timer {
	a.codec.decode = 0
	return call.StartTimer()
}

// outcome ends timing a call.
func (a *caller) outcome(t *call.Timer) call.Outcome {
	t.AddDecode(a.codec.decode)
	return t.Outcome()
}

// Caller implements call.Client.
func (c *Client) Caller(scenario api.Scenario) (call.Caller, error) {
	switch scenario {
	case api.Small:
		return &small{newCaller(c)}, nil
	case api.Large:
		return &large{newCaller(c)}, nil
	case api.Stream:
		return &stream{newCaller(c)}, nil
	case api.Post:
		return &post{caller: newCaller(c), list: data.ProtoList(data.MustLandings())}, nil
	}
	return nil, fmt.Errorf("grpccall: unknown scenario %q", scenario)
}

// classify wraps a gRPC status error with its class: "timeout" for
// DeadlineExceeded (the server may notice the propagated deadline before
// the client does), else "grpc-<Code>". A cancellation is left to
// call.Classify, which reads the call's context.
func classify(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch st.Code() {
	case codes.DeadlineExceeded:
		return &call.Error{Class: call.ClassTimeout, Err: err}
	case codes.Canceled:
		return err
	}
	return call.GRPCCode(st.Code().String(), err)
}

var empty = &pb.EmptyRequest{}

// small: GetVersion -> "API Version 1.0".
type small struct{ caller }

func (a *small) Call(ctx context.Context) (call.Outcome, error) {
	timer := a.start()
	v, err := a.c.stub().GetVersion(ctx, empty, a.opts...)
	if err != nil {
		return call.Outcome{}, classify(err)
	}
	return a.outcome(&timer), call.CheckString(v.GetApiVersion(), data.Version)
}

// large: GetLargePayloadAsList -> the 1000 records in one message.
type large struct{ caller }

func (a *large) Call(ctx context.Context) (call.Outcome, error) {
	timer := a.start()
	list, err := a.c.stub().GetLargePayloadAsList(ctx, empty, a.opts...)
	if err != nil {
		return call.Outcome{}, classify(err)
	}
	return a.outcome(&timer), call.CheckMessages(list.GetMeteoriteLandings())
}

// stream: GetLargePayload -> 1000 messages, decoded as they arrive; the
// decode time is the sum over the messages.
type stream struct{ caller }

func (a *stream) Call(ctx context.Context) (call.Outcome, error) {
	timer := a.start()
	ctx, cancel := context.WithCancel(ctx) // ends the stream on an early return
	defer cancel()
	st, err := a.c.stub().GetLargePayload(ctx, empty, a.opts...)
	if err != nil {
		return call.Outcome{}, classify(err)
	}
	n := 0
	for {
		m, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return call.Outcome{}, classify(err)
		}
		timer.Record()
		if err := call.CheckID(n, m.GetId()); err != nil {
			return call.Outcome{}, err
		}
		n++
	}
	return a.outcome(&timer), call.CheckCount(n)
}

// post: PostLargePayload with the 1000 records (marshalled by grpc-go per
// call) -> "SUCCESS".
type post struct {
	caller
	list *pb.MeteoriteLandingList
}

func (a *post) Call(ctx context.Context) (call.Outcome, error) {
	timer := a.start()
	st, err := a.c.stub().PostLargePayload(ctx, a.list, a.opts...)
	if err != nil {
		return call.Outcome{}, classify(err)
	}
	return a.outcome(&timer), call.CheckString(st.GetStatus(), data.Success)
}
