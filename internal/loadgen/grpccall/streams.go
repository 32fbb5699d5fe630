package grpccall

// The stream scenarios over gRPC, one message a call (call.Stream): upload
// (UploadStream, a client stream), chat (Chat, bidirectional) and feed
// (Feed, a paced server push). grpc-go opens a stream without a round
// trip (its headers leave with the first message), so a stream's setup
// time is the client's own work, and the server's part of it lands in the
// first message.

import (
	"context"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// streamCaller returns the caller of a stream scenario.
func (c *Client) streamCaller(scenario api.Scenario) (call.Caller, error) {
	a := newCaller(c)
	st := call.Stream{N: c.messages}
	switch scenario {
	case api.Upload:
		ls, err := data.LandingsN(min(st.N, data.Count))
		if err != nil {
			return nil, fmt.Errorf("grpccall: %w", err)
		}
		msgs := make([]*pb.MeteoriteLanding, len(ls))
		for i := range ls {
			msgs[i] = ls[i].Proto()
		}
		return &upload{caller: a, st: st, msgs: msgs}, nil
	case api.Chat:
		return &chat{caller: a, st: st, out: &pb.ChatMessage{Text: data.ChatText}, in: &pb.ChatMessage{}}, nil
	case api.Feed:
		want, err := call.Want(st.N)
		if err != nil {
			return nil, fmt.Errorf("grpccall: %w", err)
		}
		return &feed{caller: a, st: st, want: want, req: &pb.FeedRequest{Messages: uint32(st.N), Rate: c.feedRate}, in: &pb.MeteoriteLanding{}}, nil
	}
	return nil, fmt.Errorf("grpccall: unknown scenario %q", scenario)
}

// upload: one record a call on an UploadStream (the records cycle through
// the data set); the stream's last record's call also closes it and waits
// for the server's "SUCCESS".
type upload struct {
	caller
	st   call.Stream
	s    grpc.ClientStreamingClient[pb.MeteoriteLanding, pb.StatusResponse]
	msgs []*pb.MeteoriteLanding
}

func (a *upload) Call(ctx context.Context) (call.Outcome, error) {
	setup, err := a.st.Open(func() error { return nil }, func(sctx context.Context) (err error) {
		a.s, err = a.c.stub().UploadStream(sctx, a.opts...)
		return err
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
		st, err := a.s.CloseAndRecv()
		a.st.Close()
		if err != nil {
			return call.Outcome{}, Classify(err)
		}
		if err := call.CheckString(st.GetStatus(), data.Success); err != nil {
			return call.Outcome{}, err
		}
	}
	return call.Outcome{Setup: setup}, nil
}

// fail ends the stream after a failed Send: the server's status, if it
// ended the stream, is RecvMsg's.
func (a *upload) fail(err error) error {
	if err == io.EOF {
		_, err = a.s.CloseAndRecv()
	}
	a.st.Close()
	return Classify(err)
}

// chat: one message a call, sent with its sequence number and send time,
// and its answer received and checked: the latency is the round trip on
// the client's own clock.
type chat struct {
	caller
	st      call.Stream
	s       grpc.BidiStreamingClient[pb.ChatMessage, pb.ChatMessage]
	seq     uint64
	out, in *pb.ChatMessage
}

func (a *chat) Call(ctx context.Context) (call.Outcome, error) {
	setup, err := a.st.Open(a.end, func(sctx context.Context) (err error) {
		a.s, err = a.c.stub().Chat(sctx, a.opts...)
		return err
	})
	if err != nil {
		return call.Outcome{}, Classify(err)
	}
	defer a.st.Guard(ctx)()
	a.seq++
	a.out.Seq, a.out.SentUnixNano = a.seq, time.Now().UnixNano()
	if err := a.s.Send(a.out); err != nil {
		if err == io.EOF {
			err = a.s.RecvMsg(a.in)
		}
		a.st.Close()
		return call.Outcome{}, Classify(err)
	}
	if err := a.s.RecvMsg(a.in); err != nil {
		a.st.Close()
		if err == io.EOF {
			return call.Outcome{}, call.Invalid("chat: the stream ended before answering message %d", a.seq)
		}
		return call.Outcome{}, Classify(err)
	}
	a.st.Done++
	if a.in.GetSeq() != a.seq || a.in.GetSentUnixNano() != a.out.SentUnixNano || a.in.GetText() != a.out.Text {
		a.st.Close()
		return call.Outcome{}, call.Invalid("chat: answer seq %d sent %d, want %d sent %d", a.in.GetSeq(), a.in.GetSentUnixNano(), a.seq, a.out.SentUnixNano)
	}
	return call.Outcome{Setup: setup}, nil
}

// end closes a chat stream whose messages are done: the server ends it
// once it has read the close.
func (a *chat) end() error {
	if err := a.s.CloseSend(); err != nil {
		return Classify(err)
	}
	if err := a.s.RecvMsg(a.in); err != io.EOF {
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
	st   call.Stream
	s    grpc.ServerStreamingClient[pb.MeteoriteLanding]
	want *call.Records
	req  *pb.FeedRequest
	in   *pb.MeteoriteLanding
}

func (a *feed) Call(ctx context.Context) (call.Outcome, error) {
	setup, err := a.st.Open(a.end, func(sctx context.Context) (err error) {
		a.s, err = a.c.stub().Feed(sctx, a.req, a.opts...)
		return err
	})
	if err != nil {
		return call.Outcome{}, Classify(err)
	}
	defer a.st.Guard(ctx)()
	if err := a.s.RecvMsg(a.in); err != nil {
		a.st.Close()
		if err == io.EOF {
			return call.Outcome{}, a.want.CheckCount(a.st.Done)
		}
		return call.Outcome{}, Classify(err)
	}
	now := time.Now()
	if err := a.want.CheckID(a.st.Done, a.in.GetId()); err != nil {
		a.st.Close()
		return call.Outcome{}, err
	}
	a.st.Done++
	sent := time.Unix(0, a.in.GetSentUnixNano())
	if a.in.GetSentUnixNano() == 0 || sent.After(now) {
		a.st.Close()
		return call.Outcome{}, call.Invalid("feed: record %d stamped %d, after its receipt: the server's clock is not this machine's (feed latency is measured from the server's stamp)", a.st.Done-1, a.in.GetSentUnixNano())
	}
	return call.Outcome{Setup: setup, Sent: sent}, nil
}

// end reads a feed's end after its last record.
func (a *feed) end() error {
	if err := a.s.RecvMsg(a.in); err != io.EOF {
		if err == nil {
			return a.want.CheckCount(a.st.Done + 1)
		}
		return Classify(err)
	}
	return nil
}
