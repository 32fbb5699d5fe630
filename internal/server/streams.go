package server

// The streams both ways on gRPC (issue 42): UploadStream (client stream),
// Chat (bidirectional) and Feed (a paced server push). Their REST-world
// counterparts, WebSocket, Server-Sent Events and a chunked NDJSON upload,
// are in streamrest.go, the same methods over gRPC-Web and Connect in
// connectstreams.go; what they share (the feed's request, its pacing,
// stamping a record; the three methods' work: uploadRecords, chatEcho,
// feedRecords) is here.
//
// Memory: every stream is admitted by the tap as a large call is
// (callOverhead, grpc.go), so the number of open streams is bounded by the
// memory budget; a feed charges each record to its connection's send
// budget as GetLargePayload does, so a client that never reads makes the
// feed wait, then end RESOURCE_EXHAUSTED (membudget.go): it never queues
// more. Chat answers one message per message read, so a client that does
// not read its answers stops being read from once grpc-go's per-stream
// write quota (64 KiB) is spent.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/clock"
	"github.com/meteorbench/meteorbench/internal/data"
)

// feed is a validated FeedRequest: n records, rate a second (0: as fast as
// the client reads).
type feed struct {
	n    int
	rate float64
}

// newFeed validates a feed's request; messages 0 is the default.
func newFeed(messages uint64, rate float64) (feed, error) {
	switch {
	case messages > api.MaxStreamMessages:
		return feed{}, fmt.Errorf("messages %d: want 1..%d", messages, api.MaxStreamMessages)
	case !(rate >= 0 && rate <= api.MaxFeedRate): // NaN too
		return feed{}, fmt.Errorf("rate %v: want 0..%g records a second", rate, float64(api.MaxFeedRate))
	}
	if messages == 0 {
		messages = api.DefaultStreamMessages
	}
	return feed{n: int(messages), rate: rate}, nil
}

// wait waits until record i is due (from start), or ctx ends.
func (f feed) wait(ctx context.Context, start time.Time, i int) bool {
	if f.rate == 0 || i == 0 {
		return ctx.Err() == nil
	}
	return clock.WaitUntil(ctx.Done(), start.Add(time.Duration(float64(i)/f.rate*float64(time.Second))))
}

// stamped is m with the server's send time, a new message sharing m's
// read-only parts (the records are shared by every call).
func stamped(m *pb.MeteoriteLanding, now time.Time) *pb.MeteoriteLanding {
	return &pb.MeteoriteLanding{
		Id: m.Id, Name: m.Name, Fall: m.Fall, Geolocation: m.Geolocation, Mass: m.Mass,
		Nametype: m.Nametype, Recclass: m.Recclass, Reclat: m.Reclat, Reclong: m.Reclong, Year: m.Year,
		SentUnixNano: now.UnixNano(),
	}
}

// errTooManyMessages ends an upload or chat stream longer than
// api.MaxStreamMessages.
var errTooManyMessages = fmt.Errorf("more than %d messages on one stream", api.MaxStreamMessages)

// streamFail is a stream method's refusal: a gRPC code and a message,
// which each server (grpc-go here, connect in connectstreams.go) turns
// into its own status.
type streamFail struct {
	code codes.Code
	msg  string
}

func (f streamFail) Error() string { return f.msg }

// grpcStreamErr is err as grpc-go's status: a streamFail its code, a
// context's end Canceled or DeadlineExceeded, anything else (grpc-go's own
// statuses) unchanged.
func grpcStreamErr(err error) error {
	var f streamFail
	switch {
	case errors.As(err, &f):
		return status.Error(f.code, f.msg)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	}
	return err
}

// uploadRecords is UploadStream's work, on every server: each record
// decoded as it arrives (recv), until the client closes its side (nil).
func uploadRecords(recv func() (*pb.MeteoriteLanding, error)) error {
	for n := 0; ; n++ {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if n >= api.MaxStreamMessages {
			return streamFail{codes.ResourceExhausted, errTooManyMessages.Error()}
		}
		if _, err := data.FromProto(m); err != nil {
			return streamFail{codes.InvalidArgument, boundEcho(fmt.Sprintf("record %d: %v", n, err))}
		}
	}
}

// chatEcho is Chat's work, on every server: each message answered with
// the same message (its seq, the sender's send time and its text), in
// order, until the client closes its side (nil).
func chatEcho(recv func() (*pb.ChatMessage, error), send func(*pb.ChatMessage) error) error {
	for n := 0; ; n++ {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if n >= api.MaxStreamMessages {
			return streamFail{codes.ResourceExhausted, errTooManyMessages.Error()}
		}
		if sz := proto.Size(m); sz > api.MaxChatMessageBytes {
			return streamFail{codes.ResourceExhausted, fmt.Sprintf("chat message %d is %d bytes; the limit is %d", n, sz, api.MaxChatMessageBytes)}
		}
		if err := send(m); err != nil {
			return err
		}
	}
}

// feedRecords is Feed's work, on every server: the records req asks for,
// at its rate, each stamped with its send time and handed to send (record
// i of the feed). A send that returns io.EOF (the client went away) ends
// the feed without an error; a paced feed ends Unavailable when the server
// drains, rather than holding the drain up for as long as its schedule
// runs.
func (s *Server) feedRecords(ctx context.Context, req *pb.FeedRequest, send func(i int, m *pb.MeteoriteLanding) error) error {
	f, err := newFeed(uint64(req.GetMessages()), req.GetRate())
	if err != nil {
		return streamFail{codes.InvalidArgument, err.Error()}
	}
	_, msgs, err := s.records(f.n)
	if err != nil {
		return streamFail{codes.Internal, "internal server error"}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.drainCtx, cancel)()
	start := time.Now()
	for i, m := range msgs {
		if !f.wait(wctx, start, i) {
			if ctx.Err() == nil {
				return streamFail{codes.Unavailable, "server shutting down"}
			}
			return ctx.Err()
		}
		if err := send(i, stamped(m, time.Now())); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
	return nil
}

// UploadStream decodes each record as it arrives, then answers "SUCCESS"
// once the client has closed its side.
func (g *grpcService) UploadStream(stream grpc.ClientStreamingServer[pb.MeteoriteLanding, pb.StatusResponse]) error {
	if err := uploadRecords(stream.Recv); err != nil {
		return grpcStreamErr(err)
	}
	return stream.SendAndClose(g.s.success)
}

// Chat answers each message with the same message, in order.
func (g *grpcService) Chat(stream grpc.BidiStreamingServer[pb.ChatMessage, pb.ChatMessage]) error {
	return grpcStreamErr(chatEcho(stream.Recv, stream.Send))
}

// Feed sends the records asked for at the rate asked for, each stamped
// with its send time, each charged to the connection's send budget.
func (g *grpcService) Feed(req *pb.FeedRequest, stream grpc.ServerStreamingServer[pb.MeteoriteLanding]) error {
	ctx := stream.Context()
	budget := sendBudgetFrom(ctx)
	// A Send that blocks longer than WriteTimeout (the client stopped
	// reading: grpc-go's per-stream write quota is spent) closes the
	// connection, as a stalled list answer's does (limits.go): the window
	// bounds what a stalled feed holds, and this bounds how long.
	stall := time.AfterFunc(time.Hour, func() { budget.stalled(g.s.log) })
	stall.Stop()
	defer stall.Stop()
	err := g.s.feedRecords(ctx, req, func(i int, m *pb.MeteoriteLanding) error {
		if err := acquireCharge(ctx, laneStream, estRecordBytes); err != nil {
			budget.refund(laneStream, min(int64(i)*estRecordBytes, streamRefund))
			return err
		}
		stall.Reset(g.s.cfg.WriteTimeout)
		err := stream.Send(m)
		stall.Stop()
		if err != nil {
			dropCharge(ctx)
			budget.refund(laneStream, min(int64(i)*estRecordBytes, streamRefund))
		}
		return err
	})
	return grpcStreamErr(err)
}

// stalled closes the connection of a stream whose client stopped reading
// (nil: a connection without a budget, which is not closed).
func (b *sendBudget) stalled(log *slog.Logger) {
	if b == nil {
		return
	}
	log.Debug("closing a gRPC connection that does not read its feed")
	_ = b.close()
}
