// Package grpccall holds the gRPC adapters, one small Caller per scenario,
// over N ClientConns (one TCP connection each) shared round-robin.
package grpccall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/meteorbench/meteorbench/api"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
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
	md    metadata.MD // authorization, when a token is set
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
	c := &Client{}
	if o.Token != "" {
		c.md = metadata.Pairs("authorization", "Bearer "+o.Token)
	}
	for range n {
		cc, err := grpc.NewClient("passthrough:///"+o.Target,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(o.Dialer.DialTCP),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxRecvMsgSize)),
		)
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

// ctx adds the authorization metadata, if any.
func (c *Client) ctx(ctx context.Context) context.Context {
	if c.md == nil {
		return ctx
	}
	return metadata.NewOutgoingContext(ctx, c.md)
}

// Caller implements call.Client.
func (c *Client) Caller(scenario api.Scenario) (call.Caller, error) {
	switch scenario {
	case api.Small:
		return &small{c}, nil
	case api.Large:
		return &large{c}, nil
	case api.Stream:
		return &stream{c}, nil
	case api.Post:
		return &post{c: c, list: data.ProtoList(data.MustLandings())}, nil
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
type small struct{ c *Client }

func (a *small) Call(ctx context.Context) (call.Outcome, error) {
	v, err := a.c.stub().GetVersion(a.c.ctx(ctx), empty)
	if err != nil {
		return call.Outcome{}, classify(err)
	}
	return call.Outcome{}, call.CheckString(v.GetApiVersion(), data.Version)
}

// large: GetLargePayloadAsList -> the 1000 records in one message.
type large struct{ c *Client }

func (a *large) Call(ctx context.Context) (call.Outcome, error) {
	list, err := a.c.stub().GetLargePayloadAsList(a.c.ctx(ctx), empty)
	if err != nil {
		return call.Outcome{}, classify(err)
	}
	return call.Outcome{}, call.CheckMessages(list.GetMeteoriteLandings())
}

// stream: GetLargePayload -> 1000 messages, decoded as they arrive.
type stream struct{ c *Client }

func (a *stream) Call(ctx context.Context) (call.Outcome, error) {
	timer := call.StartTimer()
	ctx, cancel := context.WithCancel(ctx) // ends the stream on an early return
	defer cancel()
	st, err := a.c.stub().GetLargePayload(a.c.ctx(ctx), empty)
	if err != nil {
		return call.Outcome{}, classify(err)
	}
	var ms []*pb.MeteoriteLanding
	for {
		m, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return call.Outcome{}, classify(err)
		}
		timer.Record()
		if err := call.CheckID(len(ms), m.GetId()); err != nil {
			return call.Outcome{}, err
		}
		ms = append(ms, m)
	}
	return timer.Outcome(), call.CheckCount(len(ms))
}

// post: PostLargePayload with the 1000 records (marshalled by grpc-go per
// call) -> "SUCCESS".
type post struct {
	c    *Client
	list *pb.MeteoriteLandingList
}

func (a *post) Call(ctx context.Context) (call.Outcome, error) {
	st, err := a.c.stub().PostLargePayload(a.c.ctx(ctx), a.list)
	if err != nil {
		return call.Outcome{}, classify(err)
	}
	return call.Outcome{}, call.CheckString(st.GetStatus(), data.Success)
}
