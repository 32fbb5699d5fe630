package server

// The streams both ways in the REST world (issue 42), on the same port as
// everything else: UploadStream as a chunked POST of NDJSON (or
// varint-delimited protobuf), Chat over WebSocket, Feed over WebSocket or
// Server-Sent Events. The messages are the gRPC methods' (streams.go):
// JSON in text frames, SSE events and NDJSON lines; protobuf in WebSocket
// binary frames and delimited uploads.
//
// Each stream is admitted against the memory budget as a large call is
// (callOverhead, membudget.go): a server with its budget held refuses the
// next stream with 503 before it upgrades. Once running, a stream holds
// one message at a time: a reader that never reads blocks the feed's write
// until WriteTimeout closes it (the kernel's socket buffers are all that is
// queued), and a writer that stops is closed after IdleTimeout.
//
// WebSocket is github.com/coder/websocket: context-aware reads and writes
// (a deadline per message), a read limit that closes with 1009, close codes
// with reasons, and it wraps net/http's hijacked connection, so it runs on
// the cmux port unchanged.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
)

const (
	allowPost = "POST, OPTIONS"
	// maxUploadLine bounds one NDJSON line or delimited message of an
	// upload: a record is about 250 bytes.
	maxUploadLine = api.MaxChatMessageBytes
)

// serveStream serves PathUpload, PathChat and PathFeed: auth, counting,
// admission, then the stream.
func (h *restHandler) serveStream(rw *respWriter, r *http.Request) {
	upload := r.URL.Path == api.PathUpload
	if upload {
		if r.Method != http.MethodPost {
			methodAllowed(rw, r, allowPost) // answers OPTIONS and the rest
			return
		}
	} else if !methodAllowed(rw, r, allowGet) {
		return
	}
	if h.s.token != nil && !restAuthorized(r, h.s.token) && !queryAuthorized(r, h.s.token) {
		rw.Header()["Www-Authenticate"] = []string{`Bearer realm="meteorbench"`}
		writeError(rw, http.StatusUnauthorized, "missing or wrong bearer token (the Authorization header, or ?"+api.QueryAccessToken+"= from a browser)")
		return
	}
	ws := strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
	var m method
	var isProto bool
	switch r.URL.Path {
	case api.PathUpload:
		m = methodUploadStream
		ct := mediaType(r.Header.Get("Content-Type"))
		isProto = isProtobufType(ct)
		if !isProto && ct != "" && !strings.EqualFold(ct, api.TypeNDJSON) {
			writeError(rw, http.StatusUnsupportedMediaType, "Content-Type must be "+api.TypeNDJSON+" or "+api.TypeProtobuf)
			return
		}
	case api.PathChat:
		m = methodChat
		if !ws {
			writeError(rw, http.StatusUpgradeRequired, "chat is a WebSocket: ask with Upgrade: websocket")
			return
		}
	default:
		m = methodFeed
		isProto = ws && offers(r, api.SubprotocolProtobuf)
		if !ws && !acceptsEventStream(r) {
			writeError(rw, http.StatusNotAcceptable, "feed is a WebSocket (Upgrade: websocket) or Server-Sent Events (Accept: "+api.TypeEventStream+")")
			return
		}
	}
	rw.p = protoREST
	if isProto {
		rw.p = protoRESTProtobuf
	}
	h.count(rw, m)
	var f feed
	if m == methodFeed {
		var err error
		if f, err = feedQuery(r.URL.Query()); err != nil {
			writeError(rw, http.StatusBadRequest, err.Error())
			return
		}
	}
	release, ok := h.admit(rw, r, callOverhead, upload)
	if !ok {
		return
	}
	defer release()
	switch {
	case upload:
		h.upload(rw, r, isProto)
	case ws:
		h.websocket(rw, r, m, f)
	default:
		h.sse(rw, r, f)
	}
}

// queryAuthorized checks ?access_token=<token>, which a browser's
// WebSocket and EventSource can send where they cannot send headers.
func queryAuthorized(r *http.Request, token []byte) bool {
	v := r.URL.Query()[api.QueryAccessToken]
	return len(v) == 1 && bearerMatches("Bearer "+v[0], token)
}

// offers reports whether the WebSocket request offers subprotocol p.
func offers(r *http.Request, p string) bool {
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for f := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(f) == p {
				return true
			}
		}
	}
	return false
}

func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		if strings.Contains(strings.ToLower(v), api.TypeEventStream) {
			return true
		}
	}
	return false
}

// feedQuery is the feed's request on REST: ?messages=N&rate=R.
func feedQuery(q url.Values) (feed, error) {
	var n uint64
	var rate float64
	var err error
	if v := q.Get(api.QueryMessages); v != "" {
		if n, err = strconv.ParseUint(v, 10, 64); err != nil || n == 0 {
			return feed{}, fmt.Errorf("%s=%s: want 1..%d", api.QueryMessages, boundEcho(v), api.MaxStreamMessages)
		}
	}
	if v := q.Get(api.QueryRate); v != "" {
		if rate, err = strconv.ParseFloat(v, 64); err != nil {
			return feed{}, fmt.Errorf("%s=%s: want 0..%g records a second", api.QueryRate, boundEcho(v), float64(api.MaxFeedRate))
		}
	}
	return newFeed(n, rate)
}

// streamDeadlines lifts net/http's whole-request read and write deadlines
// from a stream's connection: a stream lasts as long as its messages, each
// of which gets a deadline of its own.
func streamDeadlines(rw *respWriter) {
	rc := http.NewResponseController(rw)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
}

// websocket upgrades and runs chat or feed.
func (h *restHandler) websocket(rw *respWriter, r *http.Request, m method, f feed) {
	streamDeadlines(rw)
	c, err := websocket.Accept(rw, r, &websocket.AcceptOptions{
		Subprotocols: []string{api.SubprotocolProtobuf, api.SubprotocolJSON},
		// Any origin: the token, not a cookie, authorises a stream, so a
		// page elsewhere gains nothing a script could not do anyway (and
		// a benchmark's test page is served from another port).
		InsecureSkipVerify: true,
	})
	if err != nil {
		rw.failed = true // Accept answered the handshake's error itself
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := context.AfterFunc(h.s.drainCtx, func() {
		c.Close(websocket.StatusGoingAway, "server shutting down")
		cancel()
	})
	defer stop()
	c.SetReadLimit(api.MaxChatMessageBytes)
	if m == methodChat {
		err = h.chat(ctx, c, rw.json())
	} else {
		err = h.feedWS(ctx, c, f, c.Subprotocol() == api.SubprotocolProtobuf)
	}
	if err != nil {
		var ce closeError
		if errors.As(err, &ce) {
			c.Close(ce.code, ce.reason)
		} else {
			c.CloseNow()
		}
		if websocket.CloseStatus(err) == -1 || ce.code != 0 {
			rw.failed = true
		}
		return
	}
	c.Close(websocket.StatusNormalClosure, "")
}

// closeError ends a WebSocket with a close code and a reason (at most 123
// bytes, as RFC 6455 allows).
type closeError struct {
	code   websocket.StatusCode
	reason string
}

func (e closeError) Error() string { return fmt.Sprintf("websocket close %d: %s", e.code, e.reason) }

func closeWith(code websocket.StatusCode, format string, args ...any) closeError {
	reason := fmt.Sprintf(format, args...)
	if len(reason) > 120 {
		reason = reason[:120]
	}
	return closeError{code, reason}
}

// chat answers each message with the same message, in the frame type it
// came in: text frames JSON, binary frames protobuf. Decoded and encoded
// again, as gRPC's Chat does.
func (h *restHandler) chat(ctx context.Context, c *websocket.Conn, jc *jsoncodec.Codec) error {
	var jm data.ChatMessage
	pm := &pb.ChatMessage{}
	for n := 0; ; n++ {
		rctx, cancel := context.WithTimeout(ctx, h.s.cfg.IdleTimeout)
		typ, b, err := c.Read(rctx)
		cancel()
		if err != nil {
			if websocket.CloseStatus(err) != -1 {
				return nil // the client closed
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return closeWith(websocket.StatusPolicyViolation, "idle for %v", h.s.cfg.IdleTimeout)
			}
			return err // over the read limit: the library closed with 1009
		}
		if n >= api.MaxStreamMessages {
			return closeWith(websocket.StatusPolicyViolation, "%v", errTooManyMessages)
		}
		var out []byte
		if typ == websocket.MessageBinary {
			if err := proto.Unmarshal(b, pm); err != nil {
				return closeWith(websocket.StatusInvalidFramePayloadData, "message %d is not a ChatMessage: %v", n, err)
			}
			out, err = proto.Marshal(pm)
		} else {
			jm = data.ChatMessage{}
			if err := jc.Unmarshal(b, &jm); err != nil {
				return closeWith(websocket.StatusInvalidFramePayloadData, "message %d is not a chat message: %v", n, err)
			}
			out, err = jc.Marshal(&jm)
		}
		if err != nil {
			return closeWith(websocket.StatusInternalError, "encoding the answer: %v", err)
		}
		wctx, cancel := context.WithTimeout(ctx, h.s.cfg.WriteTimeout)
		err = c.Write(wctx, typ, out)
		cancel()
		if err != nil {
			return err
		}
	}
}

// feedWS sends the feed's records, one frame each.
func (h *restHandler) feedWS(ctx context.Context, c *websocket.Conn, f feed, isProto bool) error {
	ctx = c.CloseRead(ctx) // the client sends nothing; a close ends ctx
	typ := websocket.MessageText
	if isProto {
		typ = websocket.MessageBinary
	}
	return h.feedEach(ctx, f, isProto, func(b []byte) error {
		wctx, cancel := context.WithTimeout(ctx, h.s.cfg.WriteTimeout)
		defer cancel()
		if isProto {
			return c.Write(wctx, typ, b)
		}
		return c.Write(wctx, typ, b[:len(b)-1]) // no newline in a frame
	})
}

// feedEach encodes the feed's records, each stamped as it is due, and
// hands each to send: protobuf, or JSON and a newline.
func (h *restHandler) feedEach(ctx context.Context, f feed, isProto bool, send func([]byte) error) error {
	ls, msgs, err := h.s.records(f.n)
	if err != nil {
		return err
	}
	buf := getBuffer()
	defer putBuffer(buf)
	jc := jsoncodec.Default()
	start := time.Now()
	for i := range f.n {
		if !f.wait(ctx, start, i) {
			return ctx.Err()
		}
		buf.Reset()
		now := time.Now()
		if isProto {
			b, err := proto.MarshalOptions{}.MarshalAppend(buf.AvailableBuffer(), stamped(msgs[i], now))
			if err != nil {
				return err
			}
			buf.Write(b)
		} else if err := jc.Encode(buf, &data.FeedRecord{Landing: ls[i], SentUnixNano: now.UnixNano()}); err != nil {
			return err
		}
		if err := send(buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// sse sends the feed as Server-Sent Events, "data: <record>", each flushed
// at once, with a write deadline of its own.
func (h *restHandler) sse(rw *respWriter, r *http.Request, f feed) {
	streamDeadlines(rw)
	rc := http.NewResponseController(rw)
	hd := rw.Header()
	hd["Content-Type"] = []string{api.TypeEventStream}
	hd["Cache-Control"] = []string{"no-cache"}
	rw.WriteHeader(http.StatusOK)
	if rw.flush() != nil {
		return
	}
	// The feed ends when the server drains, as a WebSocket's does.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(h.s.drainCtx, cancel)()
	err := h.feedEach(ctx, f, false, func(b []byte) error {
		_ = rc.SetWriteDeadline(time.Now().Add(h.s.cfg.WriteTimeout))
		if _, err := io.WriteString(rw, "data: "); err != nil {
			return err
		}
		if _, err := rw.Write(b); err != nil { // b ends in a newline
			return err
		}
		if _, err := io.WriteString(rw, "\n"); err != nil {
			return err
		}
		return rw.flush()
	})
	if err != nil {
		rw.failed = true
	}
}

// upload decodes each record of a (chunked) body as it arrives: NDJSON
// lines or varint-delimited protobuf messages, each at most maxUploadLine,
// then answers "SUCCESS" as the list upload does. A read that waits
// longer than ReadTimeout for the next record ends it (408).
func (h *restHandler) upload(rw *respWriter, r *http.Request, isProto bool) {
	streamDeadlines(rw)
	rc := http.NewResponseController(rw)
	// A drain ends the wait for the next record (408), as it ends a feed.
	defer context.AfterFunc(h.s.drainCtx, func() { _ = rc.SetReadDeadline(time.Now()) })()
	br := bufio.NewReaderSize(r.Body, 4<<10)
	jc := rw.json()
	var l data.Landing
	pm := &pb.MeteoriteLanding{}
	var scratch []byte
	for n := 0; ; n++ {
		_ = rc.SetReadDeadline(time.Now().Add(h.s.cfg.ReadTimeout))
		var rec []byte
		var err error
		if isProto {
			rec, scratch, err = readDelimited(br, scratch)
		} else {
			rec, scratch, err = readLine(br, scratch)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			rw.Header()["Connection"] = hdrClose
			var tl tooLong
			switch {
			case errors.As(err, &tl):
				writeError(rw, http.StatusRequestEntityTooLarge, fmt.Sprintf("record %d is over %d bytes", n, maxUploadLine))
			case isTimeout(err):
				writeError(rw, http.StatusRequestTimeout, fmt.Sprintf("no record %d within %v", n, h.s.cfg.ReadTimeout))
			default:
				writeError(rw, http.StatusBadRequest, fmt.Sprintf("reading record %d: %v", n, err))
			}
			return
		}
		if len(rec) == 0 && !isProto {
			n-- // a blank line
			continue
		}
		if n >= api.MaxStreamMessages {
			rw.Header()["Connection"] = hdrClose
			writeError(rw, http.StatusRequestEntityTooLarge, errTooManyMessages.Error())
			return
		}
		if isProto {
			if err = proto.Unmarshal(rec, pm); err == nil {
				_, err = data.FromProto(pm)
			}
		} else {
			l = data.Landing{}
			err = jc.Unmarshal(rec, &l)
		}
		if err != nil {
			rw.Header()["Connection"] = hdrClose
			writeError(rw, http.StatusBadRequest, fmt.Sprintf("record %d: %v", n, err))
			return
		}
	}
	if acceptPref(r.Header["Accept"]) == prefProto || isProto {
		writeProto(rw, h.s.success)
		return
	}
	writeJSON(rw, data.Success)
}

// tooLong is a record over maxUploadLine.
type tooLong struct{}

func (tooLong) Error() string { return "record too long" }

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}

// readLine reads one line without its newline (a last line without one
// too), at most maxUploadLine bytes, into scratch.
func readLine(br *bufio.Reader, scratch []byte) (line, buf []byte, err error) {
	buf = scratch[:0]
	for {
		frag, err := br.ReadSlice('\n')
		buf = append(buf, frag...)
		if len(buf) > maxUploadLine+1 {
			return nil, buf, tooLong{}
		}
		switch {
		case err == nil:
			return trimEOL(buf), buf, nil
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(buf) > 0:
			return trimEOL(buf), buf, nil
		default:
			return nil, buf, err
		}
	}
}

func trimEOL(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
	}
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return b
}

// readDelimited reads one varint-length-prefixed message into scratch.
func readDelimited(br *bufio.Reader, scratch []byte) (msg, buf []byte, err error) {
	var hdr [binaryMaxVarint]byte
	k := 0
	for {
		c, err := br.ReadByte()
		if err != nil {
			if err == io.EOF && k > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, scratch, err
		}
		hdr[k] = c
		k++
		if c < 0x80 {
			break
		}
		if k == len(hdr) {
			return nil, scratch, errors.New("bad length prefix")
		}
	}
	size, n := protowire.ConsumeVarint(hdr[:k])
	if n < 0 {
		return nil, scratch, errors.New("bad length prefix")
	}
	if size > maxUploadLine {
		return nil, scratch, tooLong{}
	}
	if cap(scratch) < int(size) {
		scratch = make([]byte, size)
	}
	buf = scratch[:size]
	if _, err := io.ReadFull(br, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, buf, err
	}
	return buf, buf, nil
}

// binaryMaxVarint is the longest varint of a 64-bit length.
const binaryMaxVarint = 10
