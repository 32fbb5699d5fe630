package lean

// The stream scenarios over gRPC on the lean client's own HTTP/2
// connections, one message a call as the standard engine's
// (grpccall/streams.go, call.Stream): upload (UploadStream, a client
// stream), chat (Chat, bidirectional) and feed (Feed, a paced server
// stream). A stream's HEADERS leave without END_STREAM (h2conn.start), its
// messages as DATA frames within the peer's send windows (sendMsg), and its
// answer's messages are taken one by one as they come (h2conn.next, a pull
// stream: the reader appends DATA and wakes the caller; the caller grants
// the stream's window back as it takes them, the writer writes the
// WINDOW_UPDATEs). Each message is decoded and checked: no two are alike.
//
// A call that ends before its message did (its deadline, the run's end)
// resets its stream (RST_STREAM CANCEL) and the connection goes on; a
// stream that ends early reports the server's status, or what ended it.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// errStreamEnded is a stream that ended (its answer's end, or what ended
// it) while its caller sent or waited for a message: the caller asks the
// stream why (grpcStream.status).
var errStreamEnded = errors.New("stream ended")

// streamCaller returns the lean caller of a gRPC stream scenario.
func (c *grpcClient) streamCaller(scenario api.Scenario) (call.Caller, error) {
	if c.o.Payload != nil {
		return nil, fmt.Errorf("lean: scenario %s carries the meteorites, not a payload", scenario)
	}
	path := map[api.Scenario]string{
		api.Upload: pb.MeteoriteLandingsService_UploadStream_FullMethodName,
		api.Chat:   pb.MeteoriteLandingsService_Chat_FullMethodName,
		api.Feed:   pb.MeteoriteLandingsService_Feed_FullMethodName,
	}[scenario]
	a := &grpcStream{c: c, m: &method{pull: true, fields: c.fields(path)}, st: call.Stream{N: c.o.MessagesPer()}}
	a.watch(c.dog)
	a.in = make([]byte, 0, 256) // never nil: next's nil is no message
	switch scenario {
	case api.Upload:
		ls, err := data.LandingsN(min(a.st.N, data.Count))
		if err != nil {
			return nil, fmt.Errorf("lean: %w", err)
		}
		u := &upload{grpcStream: a, msgs: make([][]byte, len(ls))}
		for i := range ls {
			if u.msgs[i], err = prefixed(ls[i].Proto()); err != nil {
				return nil, fmt.Errorf("lean: %w", err)
			}
		}
		a.x = u
	case api.Chat:
		ch := &chat{grpcStream: a, out: &pb.ChatMessage{Text: data.ChatText}, buf: make([]byte, 5, 64)}
		a.x = ch
	case api.Feed:
		want, err := call.Want(a.st.N)
		if err != nil {
			return nil, fmt.Errorf("lean: %w", err)
		}
		req, err := prefixed(&pb.FeedRequest{Messages: uint32(a.st.N), Rate: c.o.FeedRate})
		if err != nil {
			return nil, fmt.Errorf("lean: %w", err)
		}
		fd := &feed{grpcStream: a, want: want, req: req}
		a.x = fd
	default:
		return nil, fmt.Errorf("lean: unknown scenario %q", scenario)
	}
	return a, nil
}

// prefixed is m length-prefixed, uncompressed.
func prefixed(m proto.Message) ([]byte, error) {
	b, err := proto.MarshalOptions{}.MarshalAppend(make([]byte, 5, 5+proto.Size(m)), m)
	if err != nil {
		return nil, err
	}
	return frame(b), nil
}

// frame fills the prefix of a message marshalled after 5 bytes.
func frame(b []byte) []byte {
	b[0] = 0
	binary.BigEndian.PutUint32(b[1:5], uint32(len(b)-5))
	return b
}

// grpcStream is what the three scenarios' callers share: the stream open
// (one at a time), the deadline kept as every lean call's (the watchdog),
// and sending and taking messages.
type grpcStream struct {
	c *grpcClient
	m *method
	watched
	h  *h2conn // the open stream's connection
	st call.Stream
	in []byte // the last message taken
	// deadline is the call's (noDeadline: none): a dial's.
	deadline time.Time
	ctx      ctxWatch
	// x is the scenario's part of a call (upload, chat, feed).
	x interface {
		call(ctx context.Context) (call.Outcome, error)
	}
}

// Call implements call.Caller: a call by ctx's deadline.
func (a *grpcStream) Call(ctx context.Context) (call.Outcome, error) {
	return a.CallBy(ctx, deadlineOf(ctx))
}

// CallBy implements call.DeadlineCaller.
func (a *grpcStream) CallBy(ctx context.Context, deadline time.Time) (call.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return call.Outcome{}, err
	}
	if deadline.IsZero() {
		deadline = noDeadline
	}
	select { // a token left by a call that ended as the watchdog fired
	case <-a.expired:
	default:
	}
	a.s.late = false // no abort runs between calls (inflight.end)
	a.deadline = deadline
	a.ctx.follow(ctx, a.f)
	a.f.begin(ctx, deadline)
	out, err := a.x.call(ctx)
	if aborted, late := a.f.end(time.Now()); (aborted || late) && err == nil {
		// The message came, but after its deadline: a timeout, and its
		// stream goes with it as the standard engine's does.
		a.abort()
		err = a.gone(ctx)
	}
	if err != nil {
		return call.Outcome{}, err
	}
	return out, nil
}

// gone is the error of a call that ctx or the watchdog ended.
func (a *grpcStream) gone(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return errDeadline
}

// open opens a stream, its HEADERS followed by first (end: and the client's
// side ended), on the client's next connection; a stream the server never
// processed is opened again once, on another.
func (a *grpcStream) open(ctx context.Context, first []byte, end bool) error {
	lazy := len(first) == 0 // the HEADERS alone: they leave with the first message
	for attempt := 0; ; attempt++ {
		h, err := a.c.conn(ctx, a.deadline)
		if err != nil {
			return err
		}
		select { // a token of the stream before
		case <-a.s.done:
		default:
		}
		a.sending.Store(h)
		err = h.start(ctx, &a.s, a.m, first, end, lazy)
		a.sending.Store(nil)
		if err == nil {
			a.h = h
			if a.s.late || ctx.Err() != nil { // start's wait for window gave up (sendRest)
				a.abort()
				return a.gone(ctx)
			}
			return nil
		}
		if !isRefused(err) || attempt > 0 || ctx.Err() != nil {
			return err
		}
	}
}

// abort ends the open stream: a reset if it is still open (the connection
// goes on), and the next call opens a new one.
func (a *grpcStream) abort() {
	if a.h != nil {
		a.h.cancel(&a.s)
	}
	a.st.Close()
}

// fail ends the stream after err, and returns the call's error: the
// stream's status (or what ended it) when it had ended, else err.
func (a *grpcStream) fail(ctx context.Context, err error, what string) error {
	if errors.Is(err, errStreamEnded) {
		err = a.status()
		if err == nil {
			err = call.Invalid("%s: the stream ended after %d of %d messages", what, a.st.Done, a.st.N)
		}
	} else if errors.Is(err, errDeadline) || ctx.Err() != nil {
		err = a.gone(ctx)
	}
	a.abort()
	return err
}

// status checks the end of a stream that ended: its status, media type
// and framing (its messages were all taken); nil for a clean end.
func (a *grpcStream) status() error {
	a.h.mu.Lock()
	defer a.h.mu.Unlock()
	return grpcAnswer(&a.s, false)
}

// sendMsg writes p on the open stream as DATA frames, within the peer's
// send windows (waiting for them), the last ending the client's side when
// end is set (p may then be empty). errStreamEnded: the stream ended
// first. A caller that waits for an answer next writes its frames itself,
// with those of the other callers ready (as a request is written); lazy
// (an upload's record with more to come) hands them to the connection's
// writer, as grpc-go's Send hands a message to its loopy writer: the
// records queued meanwhile leave in one write, and the call ends once its
// record is queued within the windows.
func (a *grpcStream) sendMsg(ctx context.Context, p []byte, end, lazy bool) error {
	h, s := a.h, &a.s
	var stop func() bool
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for first := true; first || len(p) > 0; first = false {
		h.mu.Lock()
		n, err := 0, error(nil)
		for {
			switch {
			case s.ended:
				err = errStreamEnded
			case s.late:
				err = errDeadline
			case ctx.Err() != nil:
				err = ctx.Err()
			}
			if err != nil || len(p) == 0 {
				break
			}
			if n = h.grantLocked(s, len(p)); n > 0 {
				break
			}
			if stop == nil {
				stop = context.AfterFunc(ctx, func() { h.mu.Lock(); h.cond.Broadcast(); h.mu.Unlock() })
			}
			h.cond.Wait()
		}
		maxFrame := h.maxFrame
		h.mu.Unlock()
		if err != nil {
			return err
		}
		a.sending.Store(h)
		s.inWrite.Store(true)
		h.wmu.Lock()
		h.pend = appendData(h.pend, s.id, p[:n], maxFrame, end && n == len(p))
		flusher := h.queue()
		h.wmu.Unlock()
		err = h.handOff(flusher, lazy)
		s.inWrite.Store(false)
		a.sending.Store(nil)
		if err != nil {
			h.closeErr(err)
			return errStreamEnded // the connection ended: the stream says why
		}
		p = p[n:]
	}
	return nil
}

// recv takes the answer's next message (a.in, valid until the next);
// errStreamEnded: the stream ended, every message before taken.
func (a *grpcStream) recv(ctx context.Context) ([]byte, error) {
	for {
		msg, ended, err := a.h.next(&a.s, a.in[:0])
		switch {
		case err != nil:
			return nil, err
		case msg != nil:
			a.in = msg
			return msg, nil
		case ended:
			return nil, errStreamEnded
		}
		select {
		case <-a.s.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-a.expired:
			return nil, errDeadline
		}
	}
}

// next takes pull stream s's next whole message, appended to buf (nil:
// none yet), and grants its bytes back to the stream's window; ended: the
// stream ended and has no message left. An answer that is not gRPC's or
// breaks its framing is an error of class invalid.
func (c *h2conn) next(s *stream, buf []byte) (msg []byte, ended bool, err error) {
	c.mu.Lock()
	b := s.body
	if len(b) > 0 {
		switch {
		case s.httpStatus != 200:
			err = call.Invalid("HTTP status %d", s.httpStatus)
		case !s.typeOK:
			err = call.Invalid("content type is not application/grpc")
		case len(b) < 5:
		case b[0] != 0:
			err = call.Invalid("message compressed")
		}
	}
	if err != nil || len(b) < 5 {
		if err == nil && s.ended && len(b) > 0 {
			err = call.Invalid("stream ended in a message's 5-byte prefix (%d bytes)", len(b))
		}
		ended = s.ended
		c.mu.Unlock()
		return nil, ended, err
	}
	size := 5 + int(binary.BigEndian.Uint32(b[1:5]))
	if size > len(b) {
		ended = s.ended
		c.mu.Unlock()
		if ended {
			return nil, true, call.Invalid("stream ended in a message: %d bytes of %d", len(b)-5, size-5)
		}
		return nil, false, nil
	}
	msg = append(buf, b[5:size]...)
	s.body = b[:copy(b, b[size:])]
	owed := false
	if c.streams[s.id] == s && c.err == nil {
		if s.unacked += size; s.unacked >= recvWindow/4 {
			owed = c.queueLocked(control{kind: 'w', id: s.id, n: uint32(s.unacked)})
			s.recvAvail += int64(s.unacked)
			s.unacked = 0
		}
	}
	c.mu.Unlock()
	if owed {
		c.signal() // the writer writes the WINDOW_UPDATE
	}
	return msg, false, nil
}

// waitEnd waits for the stream's end (its trailers, or what ended it).
func (a *grpcStream) waitEnd(ctx context.Context) error {
	for {
		a.h.mu.Lock()
		ended := a.s.ended
		a.h.mu.Unlock()
		if ended {
			return nil
		}
		select {
		case <-a.s.done:
		case <-ctx.Done():
			return ctx.Err()
		case <-a.expired:
			return errDeadline
		}
	}
}

// upload: one record a call on an UploadStream (the records cycle through
// the data set); the stream's last record's call also ends the client's
// side and waits for the server's "SUCCESS".
type upload struct {
	*grpcStream
	msgs [][]byte
	st   pb.StatusResponse
}

func (u *upload) call(ctx context.Context) (call.Outcome, error) {
	a := u.grpcStream
	setup, err := a.st.Open(func() error { return nil }, func(context.Context) error { return a.open(ctx, nil, false) })
	if err != nil {
		return call.Outcome{}, err
	}
	last := a.st.Done+1 == a.st.N
	if err := a.sendMsg(ctx, u.msgs[a.st.Done%len(u.msgs)], last, !last); err != nil {
		return call.Outcome{}, a.fail(ctx, err, "upload")
	}
	a.st.Done++
	if last {
		if err := a.waitEnd(ctx); err != nil {
			return call.Outcome{}, a.fail(ctx, err, "upload")
		}
		a.h.mu.Lock()
		err := grpcAnswer(&a.s, true)
		if err == nil {
			err = proto.Unmarshal(a.s.body[5:], &u.st)
			if err != nil {
				err = call.Invalid("decode: %v", err)
			}
		}
		a.h.mu.Unlock()
		a.abort()
		if err != nil {
			return call.Outcome{}, err
		}
		if err := call.CheckString(u.st.GetStatus(), data.Success); err != nil {
			return call.Outcome{}, err
		}
	}
	return call.Outcome{Setup: setup}, nil
}

// chat: one message a call, sent with its sequence number and send time,
// and its answer taken and checked: the latency is the round trip on the
// client's own clock.
type chat struct {
	*grpcStream
	seq     uint64
	out, in *pb.ChatMessage
	buf     []byte
}

func (ch *chat) call(ctx context.Context) (call.Outcome, error) {
	a := ch.grpcStream
	setup, err := a.st.Open(func() error { return ch.end(ctx) }, func(context.Context) error { return a.open(ctx, nil, false) })
	if err != nil {
		return call.Outcome{}, err
	}
	ch.seq++
	ch.out.Seq, ch.out.SentUnixNano = ch.seq, time.Now().UnixNano()
	if ch.buf, err = (proto.MarshalOptions{}).MarshalAppend(ch.buf[:5], ch.out); err != nil {
		a.abort()
		return call.Outcome{}, fmt.Errorf("lean: chat: %w", err)
	}
	if err := a.sendMsg(ctx, frame(ch.buf), false, false); err != nil {
		return call.Outcome{}, a.fail(ctx, err, "chat")
	}
	msg, err := a.recv(ctx)
	if err != nil {
		if errors.Is(err, errStreamEnded) && a.status() == nil {
			a.abort()
			return call.Outcome{}, call.Invalid("chat: the stream ended before answering message %d", ch.seq)
		}
		return call.Outcome{}, a.fail(ctx, err, "chat")
	}
	if ch.in == nil {
		ch.in = &pb.ChatMessage{}
	}
	if err := proto.Unmarshal(msg, ch.in); err != nil {
		a.abort()
		return call.Outcome{}, call.Invalid("chat: decode: %v", err)
	}
	a.st.Done++
	if ch.in.GetSeq() != ch.seq || ch.in.GetSentUnixNano() != ch.out.SentUnixNano || ch.in.GetText() != ch.out.Text {
		a.abort()
		return call.Outcome{}, call.Invalid("chat: answer seq %d sent %d, want %d sent %d", ch.in.GetSeq(), ch.in.GetSentUnixNano(), ch.seq, ch.out.SentUnixNano)
	}
	return call.Outcome{Setup: setup}, nil
}

// end ends a chat stream whose messages are done: the client's side ends
// (an empty DATA with END_STREAM), and the server ends the stream once it
// has read that, with no answer more.
func (ch *chat) end(ctx context.Context) error {
	a := ch.grpcStream
	err := a.sendMsg(ctx, nil, true, false)
	if err == nil {
		if _, err = a.recv(ctx); err == nil {
			err = call.Invalid("chat: an answer after the last message")
		}
	}
	if errors.Is(err, errStreamEnded) {
		err = a.status()
	} else if errors.Is(err, errDeadline) || ctx.Err() != nil {
		err = a.gone(ctx)
	}
	if err != nil {
		a.h.cancel(&a.s)
	}
	return err
}

// feed: one record a call, as the server pushes them: the latency is from
// the server's stamp (Outcome.Sent) to the record's receipt.
type feed struct {
	*grpcStream
	want *call.Records
	req  []byte
	in   pb.MeteoriteLanding
}

func (fd *feed) call(ctx context.Context) (call.Outcome, error) {
	a := fd.grpcStream
	setup, err := a.st.Open(func() error { return fd.end(ctx) }, func(context.Context) error { return a.open(ctx, fd.req, true) })
	if err != nil {
		return call.Outcome{}, err
	}
	msg, err := a.recv(ctx)
	if err != nil {
		if errors.Is(err, errStreamEnded) {
			if err = a.status(); err == nil {
				err = fd.want.CheckCount(a.st.Done)
			}
			a.abort()
			return call.Outcome{}, err
		}
		return call.Outcome{}, a.fail(ctx, err, "feed")
	}
	now := time.Now()
	if err := proto.Unmarshal(msg, &fd.in); err != nil {
		a.abort()
		return call.Outcome{}, call.Invalid("feed: decode record %d: %v", a.st.Done, err)
	}
	if err := fd.want.CheckID(a.st.Done, fd.in.GetId()); err != nil {
		a.abort()
		return call.Outcome{}, err
	}
	a.st.Done++
	sent := time.Unix(0, fd.in.GetSentUnixNano())
	if fd.in.GetSentUnixNano() == 0 || sent.After(now) {
		a.abort()
		return call.Outcome{}, call.Invalid("feed: record %d stamped %d, after its receipt: the server's clock is not this machine's (feed latency is measured from the server's stamp)", a.st.Done-1, fd.in.GetSentUnixNano())
	}
	return call.Outcome{Setup: setup, Sent: sent}, nil
}

// end reads a feed's end after its last record.
func (fd *feed) end(ctx context.Context) error {
	a := fd.grpcStream
	_, err := a.recv(ctx)
	switch {
	case err == nil:
		err = fd.want.CheckCount(a.st.Done + 1)
	case errors.Is(err, errStreamEnded):
		err = a.status()
	case errors.Is(err, errDeadline) || ctx.Err() != nil:
		err = a.gone(ctx)
	}
	if err != nil {
		a.h.cancel(&a.s)
	}
	return err
}
