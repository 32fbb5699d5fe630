package server

// The streams both ways (issue 42) over the web protocols, where they
// carry the stream type: Feed (a server stream) over gRPC-Web and Connect,
// on HTTP/1.1 and HTTP/2; UploadStream (a client stream) and Chat
// (bidirectional) over Connect only: gRPC-Web has no client or
// bidirectional streams (a gRPC-Web call of them is answered
// UNIMPLEMENTED, saying so), and connect-go serves a bidirectional stream
// over HTTP/2 only (505 on HTTP/1.1); a client stream it reads over either.
// The work is the gRPC methods' (streams.go: uploadRecords, chatEcho,
// feedRecords); what differs is the transport's.
//
// Memory and stalls: each stream is admitted as a large call, callOverhead
// (connect.go ServeHTTP, as REST's streams are); net/http holds one
// message of a stream at a time (a Send returns once its frame is written
// out), so a feed whose client stopped reading holds one record until
// WriteTimeout; then its stream is ended: the write's deadline is set in
// the past (streamWatch), which fails the blocked write (HTTP/1.1: and
// closes the connection) or resets the stream (HTTP/2). A client that
// stops sending is ended the same way after ReadTimeout (an upload's next
// record, as REST's chunked upload) or IdleTimeout (a chat's next
// message, as REST's WebSocket chat). net/http's whole-request deadlines
// are lifted from a stream: it lasts as long as its messages.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/grpc/codes"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
)

// connectStreamRoutes are the stream methods' routes.
func (c *connectHandler) connectStreamRoutes(opts connect.HandlerOption) map[string]connectRoute {
	s := c.s
	return map[string]connectRoute{
		pb.MeteoriteLandingsService_Feed_FullMethodName: {m: methodFeed, webOnly: true, h: connect.NewServerStreamHandler(
			pb.MeteoriteLandingsService_Feed_FullMethodName,
			func(ctx context.Context, req *connect.Request[pb.FeedRequest], stream *connect.ServerStream[pb.MeteoriteLanding]) error {
				_, err := connectCall(c, ctx, req, methodFeed, func(ctx context.Context) (*struct{}, error) {
					w := watchFrom(ctx)
					return nil, connectStreamErr(w.ended(s.feedRecords(ctx, req.Msg, func(_ int, m *pb.MeteoriteLanding) error {
						w.arm(s.cfg.WriteTimeout, (*http.ResponseController).SetWriteDeadline)
						err := stream.Send(m)
						w.disarm()
						return err
					})))
				})
				return err
			}, opts)},
		pb.MeteoriteLandingsService_UploadStream_FullMethodName: {m: methodUploadStream, webOnly: true, clientStream: true, h: connect.NewClientStreamHandler(
			pb.MeteoriteLandingsService_UploadStream_FullMethodName,
			func(ctx context.Context, stream *connect.ClientStream[pb.MeteoriteLanding]) (*connect.Response[pb.StatusResponse], error) {
				return unaryAnswer(connectCall(c, ctx, stream, methodUploadStream, func(ctx context.Context) (*pb.StatusResponse, error) {
					w := watchFrom(ctx)
					err := uploadRecords(func() (*pb.MeteoriteLanding, error) {
						w.arm(s.cfg.ReadTimeout, (*http.ResponseController).SetReadDeadline)
						ok := stream.Receive()
						w.disarm()
						return connectNext(ok, stream.Msg(), stream.Err())
					})
					if err != nil {
						return nil, connectStreamErr(w.ended(err))
					}
					return s.success, nil
				}))
			}, opts)},
		pb.MeteoriteLandingsService_Chat_FullMethodName: {m: methodChat, webOnly: true, clientStream: true, h: connect.NewBidiStreamHandler(
			pb.MeteoriteLandingsService_Chat_FullMethodName,
			func(ctx context.Context, stream *connect.BidiStream[pb.ChatMessage, pb.ChatMessage]) error {
				_, err := connectCall(c, ctx, stream, methodChat, func(ctx context.Context) (*struct{}, error) {
					w := watchFrom(ctx)
					return nil, connectStreamErr(w.ended(chatEcho(func() (*pb.ChatMessage, error) {
						w.arm(s.cfg.IdleTimeout, (*http.ResponseController).SetReadDeadline)
						m, err := stream.Receive()
						w.disarm()
						return m, err // io.EOF at the client's close
					}, func(m *pb.ChatMessage) error {
						w.arm(s.cfg.WriteTimeout, (*http.ResponseController).SetWriteDeadline)
						err := stream.Send(m)
						w.disarm()
						return err
					})))
				})
				return err
			}, opts)},
	}
}

// connectNext is a ClientStream's Receive as a Recv: the message, or
// io.EOF at the client's close, or the stream's error.
func connectNext[T any](ok bool, m *T, err error) (*T, error) {
	if ok {
		return m, nil
	}
	if err == nil {
		return nil, io.EOF
	}
	return nil, err
}

// connectStreamErr is err as connect's status: a streamFail its code (the
// numbers are gRPC's), anything else (connect's own errors, a context's
// end, which connect maps) unchanged.
func connectStreamErr(err error) error {
	var f streamFail
	if errors.As(err, &f) {
		return connect.NewError(connect.Code(f.code), errors.New(f.msg))
	}
	return err
}

// streamWatch ends a stream whose client stopped reading or sending: armed
// around each blocking Send or Receive, it sets that direction's deadline
// in the past if the call is still blocked when the time is up, which
// makes net/http fail it. Arming costs a timer's reset, not a deadline's
// set (on HTTP/2 that is a hop through the connection's serve loop, twice
// a message); net/http's own whole-request deadlines are lifted once, when
// the stream starts (newStreamWatch).
type streamWatch struct {
	rc      *http.ResponseController
	mu      sync.Mutex
	done    bool // the handler returned: rc must not be used
	drained bool // the server drains: the stream was ended
	unDrain func() bool
	timer   *time.Timer
	set     func(*http.ResponseController, time.Time) error
}

type streamWatchKey struct{}

// newStreamWatch lifts w's deadlines and returns the stream's watch; its
// stop must be called before the handler returns. When drain ends (the
// server drains), the stream is ended as a stalled one is, both ways (a
// chat or upload waiting for its client's next message would otherwise
// hold the drain up; a WebSocket is closed GoingAway then, a gRPC stream
// by GracefulStop's deadline).
func newStreamWatch(w http.ResponseWriter, drain context.Context) *streamWatch {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	sw := &streamWatch{rc: rc}
	sw.timer = time.AfterFunc(time.Hour, sw.fire)
	sw.timer.Stop()
	sw.unDrain = context.AfterFunc(drain, sw.drain)
	return sw
}

func (w *streamWatch) drain() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.drained = true
		past := time.Unix(1, 0)
		_ = w.rc.SetReadDeadline(past)
		_ = w.rc.SetWriteDeadline(past)
	}
}

// ended is err, or Unavailable when the stream was ended for the drain.
func (w *streamWatch) ended(err error) error {
	if err == nil || w == nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.drained {
		return streamFail{codes.Unavailable, "server shutting down"}
	}
	return err
}

func watchFrom(ctx context.Context) *streamWatch {
	w, _ := ctx.Value(streamWatchKey{}).(*streamWatch)
	return w // nil: a stream not started by ServeHTTP (never, but harmless)
}

func (w *streamWatch) arm(d time.Duration, set func(*http.ResponseController, time.Time) error) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.set = set
	w.mu.Unlock()
	w.timer.Reset(d)
}

func (w *streamWatch) disarm() {
	if w != nil {
		w.timer.Stop()
	}
}

func (w *streamWatch) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done && w.set != nil {
		_ = w.set(w.rc, time.Unix(1, 0))
	}
}

func (w *streamWatch) stop() {
	w.unDrain()
	w.timer.Stop()
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// refuseGRPCWebStream answers a gRPC-Web call of a client or bidirectional
// stream: UNIMPLEMENTED in a trailers-only answer, saying why.
// Over HTTP/1.1 the connection is closed after it: the client may still be
// streaming its body, which net/http would otherwise wait to discard before
// answering.
func (c *connectHandler) refuseGRPCWebStream(w http.ResponseWriter, r *http.Request, m method) {
	closeAfter(w, r) // restanswer.go
	c.s.metrics.requests[protoGRPCWeb][m].Inc()
	c.s.metrics.errors[protoGRPCWeb][m].Inc()
	h := w.Header()
	h["Content-Type"] = []string{api.TypeGRPCWebProto}
	h["Grpc-Status"] = []string{"12"} // UNIMPLEMENTED
	h["Grpc-Message"] = []string{grpcPercentEncode(r.URL.Path + " is a client or bidirectional stream, which gRPC-Web does not carry: call it over gRPC or Connect (HTTP/2)")}
	w.WriteHeader(http.StatusOK)
}
