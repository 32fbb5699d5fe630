package lean

// The stream scenarios over REST and REST+protobuf (issue 42), one message
// a call (call.Stream), with the standard engine's messages, checks,
// stream setup and error classes (restcall's streams.go), over the lean
// HTTP/1.1 client's own connections:
//
//   - upload: a chunked POST to api.PathUpload, one chunk a message (an
//     NDJSON line, or a varint-delimited record), the request's head
//     written with the first; the N-th message's call writes the last
//     chunk and reads and checks the answer ("SUCCESS");
//   - chat: a WebSocket (ws.go) to api.PathChat, JSON text frames or
//     protobuf binary ones, each message's answer awaited: the latency is
//     the round trip on the client's clock;
//   - feed: a WebSocket to api.PathFeed (protobuf: subprotocol
//     api.SubprotocolProtobuf), or Server-Sent Events (sse.go) with the
//     feed_transport setting sse (JSON only), one record a call, its
//     latency from the server's stamp.
//
// A call keeps its deadline as the lean REST calls do (the client's
// watchdog, deadline.go): a message past it, or whose context ends, aborts
// the stream's connection, which is dropped with the stream.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/restcall"
)

// streamCaller is the caller of a stream scenario.
func (c *restClient) streamCaller(scenario api.Scenario) (call.Caller, error) {
	isProto := c.protocol == api.RESTProtobuf
	codec := ""
	if !isProto {
		codec = c.o.JSONCodec
	}
	jc, err := jsoncodec.Get(codec)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	if c.o.Token != "" {
		h.Set("Authorization", "Bearer "+c.o.Token)
	}
	if jc.Name != jsoncodec.Std && !isProto {
		h.Set(jsoncodec.Header, jc.Name)
	}
	n := c.o.MessagesPer()
	base := c.newStreamBase(n)
	switch scenario {
	case api.Upload:
		ls, err := data.LandingsN(min(n, data.Count))
		if err != nil {
			return nil, fmt.Errorf("lean: %w", err)
		}
		ct, accept := api.TypeNDJSON, api.TypeJSON
		if isProto {
			ct, accept = api.TypeProtobuf, api.TypeProtobuf
		}
		h.Set("Accept", accept)
		h.Set("Content-Type", ct)
		return &chunkedUpload{streamBase: base, head: requestHead(http.MethodPost, api.PathUpload, c.o.Target, "Transfer-Encoding: chunked\r\n", h),
			accept: accept, ls: ls, isProto: isProto, jc: jc}, nil
	case api.Chat:
		return &wsChat{wsStream: wsStream{streamBase: base, req: newWSRequest(c.o.Target, api.PathChat, "", h)}, isProto: isProto, jc: jc,
			pm: &pb.ChatMessage{Text: data.ChatText}, in: &pb.ChatMessage{}}, nil
	case api.Feed:
		want, err := call.Want(n)
		if err != nil {
			return nil, fmt.Errorf("lean: %w", err)
		}
		q := url.Values{api.QueryMessages: {strconv.Itoa(n)}}
		if c.o.FeedRate > 0 {
			q.Set(api.QueryRate, strconv.FormatFloat(c.o.FeedRate, 'g', -1, 64))
		}
		path := api.PathFeed + "?" + q.Encode()
		if c.o.Settings[restcall.SettingFeedTransport] == restcall.FeedSSE && !isProto {
			h.Set("Accept", api.TypeEventStream)
			return &sseFeed{streamBase: base, req: requestHead(http.MethodGet, path, c.o.Target, "", h), jc: jc, want: want}, nil
		}
		sub := ""
		if isProto {
			sub = api.SubprotocolProtobuf
		}
		return &wsFeed{wsStream: wsStream{streamBase: base, req: newWSRequest(c.o.Target, path, sub, h)}, sub: sub, isProto: isProto, jc: jc, want: want, in: &pb.MeteoriteLanding{}}, nil
	}
	return nil, fmt.Errorf("lean: unknown scenario %q", scenario)
}

// requestHead is a request's head as net/http writes it: the request
// line, Host, User-Agent, then extra (fields net/http's transport writes
// there, each with its CRLF), then h in net/http's order.
func requestHead(method, path, host, extra string, h http.Header) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: Go-http-client/1.1\r\n%s", method, path, host, extra)
	h.Write(&b)
	b.WriteString("\r\n")
	return b.Bytes()
}

// streamBase is what every stream caller keeps: its stream's bookkeeping
// and connection, and its calls as the client's watchdog sees them.
type streamBase struct {
	c  *restClient
	st call.Stream
	// conn is the stream's connection (nil: none), atomic for the
	// watchdog's abort, which may run while a call dials.
	conn atomic.Pointer[h1conn]
	f    *inflight
	cw   ctxWatch
}

func (c *restClient) newStreamBase(n int) *streamBase {
	s := &streamBase{c: c, st: call.Stream{N: n}}
	s.f = c.dog.watch(func() {
		if h := s.conn.Load(); h != nil {
			h.abort()
		}
	})
	return s
}

// run makes one call of message by deadline (zero: none) under ctx: a
// message past its deadline, or whose ctx ends, ends its stream and drops
// its connection (the watchdog aborted it, or would have).
func (s *streamBase) run(ctx context.Context, deadline time.Time, message func(ctx context.Context, deadline time.Time) (call.Outcome, error)) (call.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return call.Outcome{}, err
	}
	if deadline.IsZero() {
		deadline = noDeadline
	}
	s.cw.follow(ctx, s.f)
	s.f.begin(ctx, deadline)
	if err := ctx.Err(); err != nil { // it ended before begin: its watch found nothing in flight
		s.f.end(time.Now())
		return call.Outcome{}, err
	}
	out, err := message(ctx, deadline)
	aborted, late := s.f.end(time.Now())
	if aborted || late {
		s.drop()
		s.st.Close()
	}
	if late {
		return call.Outcome{}, errDeadline
	}
	return out, err
}

// connect is the stream's connection: the one it has, or a new one,
// dialled by deadline.
func (s *streamBase) connect(ctx context.Context, deadline time.Time) (*h1conn, error) {
	if h := s.conn.Load(); h != nil {
		return h, nil
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	h, err := s.c.dial(dctx)
	cancel()
	if err != nil {
		return nil, err
	}
	s.conn.Store(h)
	// The watchdog found no connection to abort if it looked during the
	// dial: abort it here if it would have.
	if ctx.Err() != nil || time.Now().After(deadline) {
		h.abort()
	}
	return h, nil
}

// drop closes the stream's connection, if it has one.
func (s *streamBase) drop() {
	if h := s.conn.Swap(nil); h != nil {
		s.c.drop(h)
	}
}

// fail ends the stream after an error.
func (s *streamBase) fail(err error) (call.Outcome, error) {
	s.drop()
	s.st.Close()
	return call.Outcome{}, err
}

// wsStream is a stream over a WebSocket.
type wsStream struct {
	*streamBase
	req  wsRequest
	rbuf []byte // the upgrade request, with its key
	ws   wsConn
}

// openWS dials and upgrades a connection to the stream's WebSocket,
// offering subprotocol sub ("": none).
func (s *wsStream) openWS(ctx context.Context, deadline time.Time, sub string) error {
	s.drop() // a WebSocket's connection is never reused
	h, err := s.connect(ctx, deadline)
	if err != nil {
		return err
	}
	if s.rbuf, err = upgrade(h, s.req, sub, s.rbuf); err != nil {
		s.drop()
		return err
	}
	s.ws.h, s.ws.closeSent = h, false
	return nil
}

// wsChat: one message a call, answered in the same frame type; the
// latency is the round trip on the client's clock.
type wsChat struct {
	wsStream
	isProto bool
	jc      *jsoncodec.Codec
	seq     uint64
	jm      data.ChatMessage
	pm, in  *pb.ChatMessage
}

// Call implements call.Caller.
func (a *wsChat) Call(ctx context.Context) (call.Outcome, error) {
	return a.CallBy(ctx, deadlineOf(ctx))
}

// CallBy implements call.DeadlineCaller.
func (a *wsChat) CallBy(ctx context.Context, deadline time.Time) (call.Outcome, error) {
	return a.run(ctx, deadline, a.message)
}

func (a *wsChat) message(ctx context.Context, deadline time.Time) (call.Outcome, error) {
	setup, err := a.st.Open(a.end, func(context.Context) error { return a.openWS(ctx, deadline, "") })
	if err != nil {
		a.drop()
		return call.Outcome{}, wsErr(err)
	}
	a.seq++
	sent := time.Now().UnixNano()
	var b []byte
	var typ byte = opText
	if a.isProto {
		typ = opBinary
		a.pm.Seq, a.pm.SentUnixNano = a.seq, sent
		b, err = proto.Marshal(a.pm)
	} else {
		b, err = a.jc.Marshal(&data.ChatMessage{Seq: a.seq, SentUnixNano: sent, Text: data.ChatText})
	}
	if err == nil {
		err = a.ws.write(typ, b)
	}
	if err != nil {
		return a.fail(err)
	}
	got, ans, err := a.ws.read()
	if err != nil {
		return a.fail(wsErr(err))
	}
	a.st.Done++
	if err := a.check(typ, got, b, ans, sent); err != nil {
		return a.fail(call.Invalid("chat: %v", err))
	}
	return call.Outcome{Setup: setup}, nil
}

// check checks the answer ans (frame type got) to message b (type typ):
// the same frame type, and the message's seq, send time and text. An
// answer byte for byte the message is that (the server decodes and
// encodes again with the same codec); any other is decoded.
func (a *wsChat) check(typ, got byte, b, ans []byte, sent int64) error {
	if got != typ {
		return fmt.Errorf("a frame of opcode %d answers one of opcode %d", got, typ)
	}
	if bytes.Equal(ans, b) {
		return nil
	}
	var seq uint64
	var echoed int64
	var text string
	if a.isProto {
		if err := proto.Unmarshal(ans, a.in); err != nil {
			return err
		}
		seq, echoed, text = a.in.GetSeq(), a.in.GetSentUnixNano(), a.in.GetText()
	} else {
		a.jm = data.ChatMessage{}
		if err := a.jc.Unmarshal(ans, &a.jm); err != nil {
			return err
		}
		seq, echoed, text = a.jm.Seq, a.jm.SentUnixNano, a.jm.Text
	}
	if seq != a.seq || echoed != sent || text != data.ChatText {
		return fmt.Errorf("answer seq %d sent %d, want %d sent %d", seq, echoed, a.seq, sent)
	}
	return nil
}

// end closes a chat's WebSocket with the close handshake (1000, then the
// server's close), as the standard engine's does.
func (a *wsChat) end() error {
	defer a.drop()
	if err := a.ws.closeWith(closeNormal, ""); err != nil {
		return err
	}
	for {
		_, _, err := a.ws.read()
		if closeCode(err) != -1 {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// wsFeed: one record a call as the server pushes them over a WebSocket;
// the latency is from the server's stamp.
type wsFeed struct {
	wsStream
	sub     string
	isProto bool
	jc      *jsoncodec.Codec
	want    *call.Records
	in      *pb.MeteoriteLanding
	r       data.FeedRecord
}

// Call implements call.Caller.
func (a *wsFeed) Call(ctx context.Context) (call.Outcome, error) {
	return a.CallBy(ctx, deadlineOf(ctx))
}

// CallBy implements call.DeadlineCaller.
func (a *wsFeed) CallBy(ctx context.Context, deadline time.Time) (call.Outcome, error) {
	return a.run(ctx, deadline, a.message)
}

func (a *wsFeed) message(ctx context.Context, deadline time.Time) (call.Outcome, error) {
	setup, err := a.st.Open(a.end, func(context.Context) error { return a.openWS(ctx, deadline, a.sub) })
	if err != nil {
		a.drop()
		return call.Outcome{}, wsErr(err)
	}
	typ, b, err := a.ws.read()
	now := time.Now()
	if err != nil {
		if closeCode(err) == closeNormal {
			done := a.st.Done
			a.fail(nil)
			return call.Outcome{}, a.want.CheckCount(done)
		}
		return a.fail(wsErr(err))
	}
	var id uint32
	var stamp int64
	switch {
	case a.isProto && typ == opBinary:
		if err = proto.Unmarshal(b, a.in); err == nil {
			id, stamp = a.in.GetId(), a.in.GetSentUnixNano()
		}
	case !a.isProto && typ == opText:
		a.r = data.FeedRecord{}
		if err = a.jc.Unmarshal(b, &a.r); err == nil {
			id, stamp = a.r.ID, a.r.SentUnixNano
		}
	default:
		err = fmt.Errorf("a frame of opcode %d", typ)
	}
	if err != nil {
		return a.fail(call.Invalid("feed: record %d: %v", a.st.Done, err))
	}
	sent, err := a.checkRecord(id, stamp, now)
	if err != nil {
		return a.fail(err)
	}
	return call.Outcome{Setup: setup, Sent: sent}, nil
}

// checkRecord checks the st.Done-th record's id and stamp (received at
// now) and counts it.
func (s *streamBase) checkRecord(want *call.Records, id uint32, stamp int64, now time.Time) (time.Time, error) {
	if err := want.CheckID(s.st.Done, id); err != nil {
		return time.Time{}, err
	}
	sent := time.Unix(0, stamp)
	if stamp == 0 || sent.After(now) {
		return time.Time{}, call.Invalid("feed: record %d stamped %d, after its receipt: the server's clock is not this machine's (feed latency is measured from the server's stamp)", s.st.Done, stamp)
	}
	s.st.Done++
	return sent, nil
}

func (a *wsFeed) checkRecord(id uint32, stamp int64, now time.Time) (time.Time, error) {
	return a.streamBase.checkRecord(a.want, id, stamp, now)
}

// end reads the server's normal close after a feed's last record.
func (a *wsFeed) end() error {
	_, _, err := a.ws.read()
	a.drop()
	if closeCode(err) != closeNormal {
		if err == nil {
			return a.want.CheckCount(a.st.Done + 1)
		}
		return wsErr(err)
	}
	return nil
}

// upload: one record a call, a chunk of a chunked POST; the stream's last
// record's call writes the last chunk and reads the answer. Its setup is
// the connection's (a kept one, or a dial); the request's head leaves
// with the first record, as net/http's transport sends it.
type chunkedUpload struct {
	*streamBase
	head     []byte // the request's head
	accept   string
	ls       []data.Landing
	isProto  bool
	jc       *jsoncodec.Codec
	headDue  bool // the head is not written yet
	rec, out bytes.Buffer
	body     []byte
	status   pb.StatusResponse
}

// Call implements call.Caller.
func (a *chunkedUpload) Call(ctx context.Context) (call.Outcome, error) {
	return a.CallBy(ctx, deadlineOf(ctx))
}

// CallBy implements call.DeadlineCaller.
func (a *chunkedUpload) CallBy(ctx context.Context, deadline time.Time) (call.Outcome, error) {
	return a.run(ctx, deadline, a.message)
}

func (a *chunkedUpload) message(ctx context.Context, deadline time.Time) (call.Outcome, error) {
	setup, err := a.st.Open(func() error { return nil }, func(context.Context) error {
		_, err := a.connect(ctx, deadline)
		a.headDue = true
		return err
	})
	if err != nil {
		a.drop()
		return call.Outcome{}, err
	}
	s := &a.st
	a.rec.Reset()
	l := &a.ls[s.Done%len(a.ls)]
	if a.isProto {
		b, err := proto.Marshal(l.Proto())
		if err != nil {
			return a.fail(err)
		}
		a.rec.Write(protowire.AppendVarint(a.rec.AvailableBuffer(), uint64(len(b))))
		a.rec.Write(b)
	} else if err := a.jc.Encode(&a.rec, l); err != nil {
		return a.fail(err)
	}
	a.out.Reset()
	if a.headDue {
		a.out.Write(a.head)
	}
	a.out.Write(strconv.AppendInt(a.out.AvailableBuffer(), int64(a.rec.Len()), 16))
	a.out.WriteString("\r\n")
	a.out.Write(a.rec.Bytes())
	a.out.WriteString("\r\n")
	last := s.Done+1 == s.N
	if last {
		a.out.WriteString("0\r\n\r\n")
	}
	h := a.conn.Load()
	if _, err := h.c.Write(a.out.Bytes()); err != nil {
		return a.fail(a.early(h, err))
	}
	a.headDue = false
	s.Done++
	if !last {
		return call.Outcome{Setup: setup}, nil
	}
	hd, body, err := a.answer(h)
	if err != nil {
		return a.fail(err)
	}
	if hd.close {
		a.drop()
	}
	s.Close()
	return call.Outcome{Setup: setup}, a.check(hd, body)
}

// answer reads the upload's answer.
func (a *chunkedUpload) answer(h *h1conn) (head, []byte, error) {
	hd, err := h.readHead(a.accept)
	if err != nil {
		return hd, nil, err
	}
	a.body, err = h.readBody(a.body[:0], hd)
	return hd, a.body, err
}

// early is the error of a write that failed: the server's answer, when it
// answered (a 400 or 413 before the end of the upload), else werr.
func (a *chunkedUpload) early(h *h1conn, werr error) error {
	hd, body, err := a.answer(h)
	if err == nil && hd.status != http.StatusOK {
		return call.HTTPStatus(hd.status, errorDetail(hd.status, body))
	}
	return werr
}

// check checks the upload's answer: a 200 of the media type asked for,
// "SUCCESS".
func (a *chunkedUpload) check(hd head, body []byte) error {
	body, err := restReply(a.accept)(replyOf(hd, body))
	if err != nil {
		return err
	}
	if a.isProto {
		if err := proto.Unmarshal(body, &a.status); err != nil {
			return call.Invalid("upload: answer: %v", err)
		}
		return call.CheckString(a.status.GetStatus(), data.Success)
	}
	var s string
	if err := a.jc.Unmarshal(body, &s); err != nil {
		return call.Invalid("upload: answer %q: %v", clip(body), err)
	}
	return call.CheckString(s, data.Success)
}
