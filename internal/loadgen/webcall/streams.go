package webcall

// The stream scenarios over the web protocols, one message a call
// (call.Stream), where the protocol carries the stream type:
//
//   - feed (Feed, a server stream): gRPC-Web and Connect, over HTTP/1.1
//     and HTTP/2;
//   - upload (UploadStream, a client stream): Connect; gRPC-Web has no
//     client streams;
//   - chat (Chat, bidirectional): Connect over HTTP/2; gRPC-Web has no
//     bidirectional streams, and connect-go carries them over HTTP/2 only
//     (full duplex).
//
// The rest is refused by Caller as not served, which run records as such.
// The bookkeeping, checks and error classes are grpccall's (streams.go):
// a chat's latency is its round trip, a feed record's from the server's
// stamp to its receipt, an upload record's the time to hand it to the
// transport (the last one's call also waits for "SUCCESS").

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"connectrpc.com/connect"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// streamCaller returns the caller of a stream scenario, or why it is not
// served.
func (c *Client) streamCaller(scenario api.Scenario, a caller, opts []connect.ClientOption, url func(string) string) (call.Caller, error) {
	if c.protocol == GRPCWeb && scenario != api.Feed {
		return nil, fmt.Errorf("%s over gRPC-Web: not served (gRPC-Web has no client or bidirectional streams; the feed, a server stream, is)", scenario)
	}
	if scenario == api.Chat && c.httpVersion == call.HTTP11 {
		return nil, fmt.Errorf("chat over Connect on HTTP/1.1: not served (a bidirectional stream needs HTTP/2's full duplex; connect-go refuses it on HTTP/1.1): measure it with --http-version 2")
	}
	st := call.Stream{N: c.messages}
	switch scenario {
	case api.Upload:
		ls, err := data.LandingsN(min(st.N, data.Count))
		if err != nil {
			return nil, fmt.Errorf("webcall: %w", err)
		}
		msgs := make([]*pb.MeteoriteLanding, len(ls))
		for i := range ls {
			msgs[i] = ls[i].Proto()
		}
		return &upload{caller: a, cl: c, st: st, msgs: msgs,
			c: connect.NewClient[pb.MeteoriteLanding, pb.StatusResponse](c.http, url(pb.MeteoriteLandingsService_UploadStream_FullMethodName), opts...)}, nil
	case api.Chat:
		return &chat{caller: a, cl: c, st: st, out: &pb.ChatMessage{Text: data.ChatText},
			c: connect.NewClient[pb.ChatMessage, pb.ChatMessage](c.http, url(pb.MeteoriteLandingsService_Chat_FullMethodName), opts...)}, nil
	case api.Feed:
		want, err := call.Want(st.N)
		if err != nil {
			return nil, fmt.Errorf("webcall: %w", err)
		}
		return &feed{caller: a, cl: c, st: st, want: want, req: &pb.FeedRequest{Messages: uint32(st.N), Rate: c.feedRate},
			c: connect.NewClient[pb.FeedRequest, pb.MeteoriteLanding](c.http, url(pb.MeteoriteLandingsService_Feed_FullMethodName), opts...)}, nil
	}
	return nil, fmt.Errorf("webcall: unknown scenario %q", scenario)
}

// streamContext is a new stream's context: sctx (call.Stream's), ended
// too when the client closes, so that no stream outlives its client.
func (c *Client) streamContext(sctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(sctx)
	stop := context.AfterFunc(c.streamsCtx, cancel)
	context.AfterFunc(ctx, func() { stop() })
	return ctx
}

// setHeader sets the caller's header (the token) on a stream's request.
func (a *caller) setHeader(h map[string][]string) {
	for k, v := range a.header {
		h[k] = v
	}
}

// upload: one record a call on an UploadStream (the records cycle through
// the data set); the stream's last record's call also closes it and waits
// for the server's "SUCCESS".
type upload struct {
	caller
	cl   *Client
	c    *connect.Client[pb.MeteoriteLanding, pb.StatusResponse]
	st   call.Stream
	s    *connect.ClientStreamForClient[pb.MeteoriteLanding, pb.StatusResponse]
	msgs []*pb.MeteoriteLanding
}

func (a *upload) Call(ctx context.Context) (call.Outcome, error) {
	setup, err := a.st.Open(func() error { return nil }, func(sctx context.Context) error {
		a.s = a.c.CallClientStream(a.cl.streamContext(sctx))
		a.setHeader(a.s.RequestHeader())
		return nil
	})
	if err != nil {
		return call.Outcome{}, Classify(err)
	}
	defer a.st.Guard(ctx)()
	if err := a.s.Send(a.msgs[a.st.Done%len(a.msgs)]); err != nil {
		return call.Outcome{}, a.fail(err)
	}
	a.st.Done++
	if a.st.Done == a.st.N {
		res, err := a.s.CloseAndReceive()
		a.st.Close()
		if err != nil {
			return call.Outcome{}, Classify(err)
		}
		if err := call.CheckString(res.Msg.GetStatus(), data.Success); err != nil {
			return call.Outcome{}, err
		}
	}
	return call.Outcome{Setup: setup}, nil
}

// fail ends the stream after a failed Send: the server's status, if it
// ended the stream, is CloseAndReceive's.
func (a *upload) fail(err error) error {
	if errors.Is(err, io.EOF) {
		_, err = a.s.CloseAndReceive()
		if err == nil {
			err = call.Invalid("upload: the server answered before the stream's last record")
		}
	}
	a.st.Close()
	return Classify(err)
}

// chat: one message a call, sent with its sequence number and send time,
// and its answer received and checked: the latency is the round trip on
// the client's own clock.
type chat struct {
	caller
	cl  *Client
	c   *connect.Client[pb.ChatMessage, pb.ChatMessage]
	st  call.Stream
	s   *connect.BidiStreamForClient[pb.ChatMessage, pb.ChatMessage]
	seq uint64
	out *pb.ChatMessage
}

func (a *chat) Call(ctx context.Context) (call.Outcome, error) {
	setup, err := a.st.Open(a.end, func(sctx context.Context) error {
		a.s = a.c.CallBidiStream(a.cl.streamContext(sctx))
		a.setHeader(a.s.RequestHeader())
		return nil
	})
	if err != nil {
		return call.Outcome{}, Classify(err)
	}
	defer a.st.Guard(ctx)()
	a.seq++
	a.out.Seq, a.out.SentUnixNano = a.seq, time.Now().UnixNano()
	if err := a.s.Send(a.out); err != nil {
		if errors.Is(err, io.EOF) {
			_, err = a.s.Receive()
		}
		a.close()
		return call.Outcome{}, Classify(err)
	}
	in, err := a.s.Receive()
	if err != nil {
		a.close()
		if errors.Is(err, io.EOF) {
			return call.Outcome{}, call.Invalid("chat: the stream ended before answering message %d", a.seq)
		}
		return call.Outcome{}, Classify(err)
	}
	a.st.Done++
	if in.GetSeq() != a.seq || in.GetSentUnixNano() != a.out.SentUnixNano || in.GetText() != a.out.Text {
		a.close()
		return call.Outcome{}, call.Invalid("chat: answer seq %d sent %d, want %d sent %d", in.GetSeq(), in.GetSentUnixNano(), a.seq, a.out.SentUnixNano)
	}
	return call.Outcome{Setup: setup}, nil
}

// close ends the stream at once, after an error.
func (a *chat) close() {
	_ = a.s.CloseRequest()
	a.st.Close()
	_ = a.s.CloseResponse()
}

// end closes a chat stream whose messages are done: the server ends it
// once it has read the close.
func (a *chat) end() error {
	defer a.s.CloseResponse()
	if err := a.s.CloseRequest(); err != nil {
		return Classify(err)
	}
	if _, err := a.s.Receive(); !errors.Is(err, io.EOF) {
		if err == nil {
			return call.Invalid("chat: an answer after the last message")
		}
		return Classify(err)
	}
	return nil
}

// feed: one record a call, as the server pushes them: the latency is from
// the server's stamp (Outcome.Sent) to the record's receipt.
type feed struct {
	caller
	cl   *Client
	c    *connect.Client[pb.FeedRequest, pb.MeteoriteLanding]
	st   call.Stream
	s    *connect.ServerStreamForClient[pb.MeteoriteLanding]
	want *call.Records
	req  *pb.FeedRequest
}

func (a *feed) Call(ctx context.Context) (call.Outcome, error) {
	setup, err := a.st.Open(a.end, func(sctx context.Context) (err error) {
		a.s, err = a.c.CallServerStream(a.cl.streamContext(sctx), request(&a.caller, a.req))
		return err
	})
	if err != nil {
		return call.Outcome{}, Classify(err)
	}
	defer a.st.Guard(ctx)()
	if !a.s.Receive() {
		err := a.s.Err()
		a.close()
		if err == nil {
			return call.Outcome{}, a.want.CheckCount(a.st.Done)
		}
		return call.Outcome{}, Classify(err)
	}
	now := time.Now()
	in := a.s.Msg()
	if err := a.want.CheckID(a.st.Done, in.GetId()); err != nil {
		a.close()
		return call.Outcome{}, err
	}
	a.st.Done++
	sent := time.Unix(0, in.GetSentUnixNano())
	if in.GetSentUnixNano() == 0 || sent.After(now) {
		a.close()
		return call.Outcome{}, call.Invalid("feed: record %d stamped %d, after its receipt: the server's clock is not this machine's (feed latency is measured from the server's stamp)", a.st.Done-1, in.GetSentUnixNano())
	}
	return call.Outcome{Setup: setup, Sent: sent}, nil
}

// close ends the stream at once, after an error.
func (a *feed) close() {
	a.st.Close()
	_ = a.s.Close()
}

// end reads a feed's end after its last record.
func (a *feed) end() error {
	defer a.s.Close()
	if a.s.Receive() {
		return a.want.CheckCount(a.st.Done + 1)
	}
	if err := a.s.Err(); err != nil {
		return Classify(err)
	}
	return nil
}
