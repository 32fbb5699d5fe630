package grpccall

// The user's payload (call.Options.Payload) over gRPC: the service
// meteorbench.payload.Payload, called by its method names (no generated
// stub exists for it), its messages decoded by the payload's compiled
// codec (through the timing codec, payload.Codec).

import (
	"context"
	"fmt"
	"strconv"

	"google.golang.org/grpc"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/payload"
)

// payloadMethod is a payload service method's full name.
func payloadMethod(name string) string { return "/" + payload.ServiceName + "/" + name }

var streamDesc = &grpc.StreamDesc{ServerStreams: true}

// conn picks the next connection, round-robin across all callers.
func (c *Client) conn() *grpc.ClientConn {
	if len(c.conns) == 1 {
		return c.conns[0]
	}
	return c.conns[c.next.Add(1)%uint64(len(c.conns))]
}

// payloadCaller is Caller for a payload client.
func (c *Client) payloadCaller(scenario api.Scenario) (call.Caller, error) {
	p := c.payload
	a := newCaller(c)
	if c.records != 0 && (scenario == api.Large || scenario == api.Stream) {
		a.opts = append(a.opts, grpc.PerRPCCredentials(bearer{api.MetadataRecords: strconv.Itoa(c.records)}))
	}
	want := call.Expect(call.PayloadSize(p, c.records))
	switch scenario {
	case api.Small:
		return &payloadSmall{a}, nil
	case api.Large:
		return &payloadLarge{payloadItems{a, p, want}}, nil
	case api.Stream:
		return &payloadStream{payloadItems{a, p, want}}, nil
	case api.Post:
		return &payloadPost{a, &payload.List{P: p, Items: p.Items(c.records)}}, nil
	}
	return nil, fmt.Errorf("grpccall: unknown scenario %q", scenario)
}

type payloadSmall struct{ caller }

func (a *payloadSmall) Call(ctx context.Context) (call.Outcome, error) {
	timer := a.codec.Start()
	var v pb.Version
	if err := a.c.conn().Invoke(ctx, payloadMethod(api.MethodGetVersion), empty, &v, a.opts...); err != nil {
		return call.Outcome{}, Classify(err)
	}
	return a.codec.Outcome(&timer), call.CheckString(v.GetApiVersion(), data.Version)
}

// payloadItems is what the calls that answer items need.
type payloadItems struct {
	caller
	p    *payload.Payload
	want *call.Records
}

type payloadLarge struct{ payloadItems }

func (a *payloadLarge) Call(ctx context.Context) (call.Outcome, error) {
	timer := a.codec.Start()
	list := &payload.List{P: a.p}
	if err := a.c.conn().Invoke(ctx, payloadMethod(api.MethodGetLargePayloadAsList), empty, list, a.opts...); err != nil {
		return call.Outcome{}, Classify(err)
	}
	out := a.codec.Outcome(&timer)
	if err := a.want.CheckCount(list.Items.Len()); err != nil {
		return out, err
	}
	if err := list.Items.Check(); err != nil {
		return out, call.Invalid("%v", err)
	}
	return out, nil
}

type payloadStream struct{ payloadItems }

func (a *payloadStream) Call(ctx context.Context) (call.Outcome, error) {
	timer := a.codec.Start()
	ctx, cancel := context.WithCancel(ctx) // ends the stream on an early return
	defer cancel()
	st, err := a.c.conn().NewStream(ctx, streamDesc, payloadMethod(api.MethodGetLargePayload), a.opts...)
	if err != nil {
		return call.Outcome{}, Classify(err)
	}
	if err := st.SendMsg(empty); err != nil {
		return call.Outcome{}, Classify(err)
	}
	if err := st.CloseSend(); err != nil {
		return call.Outcome{}, Classify(err)
	}
	one := &payload.One{P: a.p}
	n, err := receive(&timer, func() error { return st.RecvMsg(one) }, func(n int) error {
		if err := a.p.CheckItem(n, one.Value); err != nil {
			return call.Invalid("%v", err)
		}
		return nil
	})
	if err != nil {
		return call.Outcome{}, err
	}
	return a.codec.Outcome(&timer), a.want.CheckCount(n)
}

type payloadPost struct {
	caller
	list *payload.List
}

func (a *payloadPost) Call(ctx context.Context) (call.Outcome, error) {
	timer := a.codec.Start()
	var st pb.StatusResponse
	if err := a.c.conn().Invoke(ctx, payloadMethod(api.MethodPostLargePayload), a.list, &st, a.opts...); err != nil {
		return call.Outcome{}, Classify(err)
	}
	return a.codec.Outcome(&timer), call.CheckString(st.GetStatus(), data.Success)
}
