package restcall

// The stream scenarios in the REST world, one message a call (call.Stream),
// in the client's encoding (rest: JSON, rest-protobuf: protobuf) over the
// scenario's transport:
//
//   - upload: a chunked POST to api.PathUpload, one NDJSON line (or
//     varint-delimited record) a message, the last message's call waiting
//     for the answer;
//   - chat: a WebSocket to api.PathChat, JSON text frames (or protobuf
//     binary ones), each message's answer awaited;
//   - feed: a WebSocket to api.PathFeed, JSON text frames (or protobuf
//     binary ones with subprotocol api.SubprotocolProtobuf), each record's
//     latency from the server's stamp.
//
// WebSocket is github.com/coder/websocket over the client's counted
// dialer; HTTP/1.1 only (WebSocket over HTTP/2, RFC 8441, is not
// supported by it), so a cell at --http-version 2 is not served.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/results"
)

// streams is what a client keeps for its stream scenarios: an HTTP client
// for WebSocket handshakes over the counted dialer, and the WebSockets
// open, closed with the client.
type streams struct {
	mu   sync.Mutex
	http *http.Client
	open map[*websocket.Conn]bool
}

// streamCaller returns the caller of a stream scenario in protobuf (isProto)
// or JSON.
func (c *client) streamCaller(o streamOptions, scenario api.Scenario, isProto bool) (call.Caller, error) {
	if o.http2 {
		return nil, fmt.Errorf("restcall: %s over HTTP/2: not served (the WebSocket and chunked-upload clients speak HTTP/1.1)", scenario)
	}
	jc, err := jsoncodec.Get(c.jsonCodec)
	if err != nil {
		return nil, err
	}
	st := call.Stream{N: o.messages}
	switch scenario {
	case api.Upload:
		ls, err := data.LandingsN(min(st.N, data.Count))
		if err != nil {
			return nil, fmt.Errorf("restcall: %w", err)
		}
		ct, accept := api.TypeNDJSON, api.TypeJSON
		if isProto {
			ct, accept = api.TypeProtobuf, api.TypeProtobuf
		}
		return &upload{c: c, st: st, ls: ls, isProto: isProto, jc: jc, req: c.template(http.MethodPost, api.PathUpload, accept, ct)}, nil
	case api.Chat:
		return &chat{c: c, st: st, isProto: isProto, jc: jc, pm: &pb.ChatMessage{Text: data.ChatText}, in: &pb.ChatMessage{}}, nil
	case api.Feed:
		want, err := call.Want(st.N)
		if err != nil {
			return nil, fmt.Errorf("restcall: %w", err)
		}
		q := url.Values{api.QueryMessages: {strconv.Itoa(st.N)}}
		if o.feedRate > 0 {
			q.Set(api.QueryRate, strconv.FormatFloat(o.feedRate, 'g', -1, 64))
		}
		path := api.PathFeed + "?" + q.Encode()
		if o.sse && !isProto {
			return &sseFeed{c: c, st: st, jc: jc, want: want, path: path}, nil
		}
		return &feed{c: c, st: st, isProto: isProto, jc: jc, want: want, path: path, in: &pb.MeteoriteLanding{}}, nil
	}
	return nil, fmt.Errorf("restcall: unknown scenario %q", scenario)
}

// streamOptions are the call.Options a stream caller needs.
type streamOptions struct {
	messages int
	feedRate float64
	http2    bool
	sse      bool // the feed over Server-Sent Events (the feed_transport setting)
}

// SettingFeedTransport is the feed's transport setting (results'
// feed_transport dimension): FeedSSE, or the default, WebSocket.
const (
	SettingFeedTransport = "feed_transport"
	FeedSSE              = "sse"
)

// dialWS opens a WebSocket to path, with the client's token, offering
// subprotocol sub (none when ""), and keeps it to close with the client.
func (c *client) dialWS(ctx context.Context, path, sub string) (*websocket.Conn, error) {
	u := *c.root
	u.Scheme = "ws"
	h := http.Header{}
	if c.auth != "" {
		h.Set("Authorization", c.auth)
	}
	if c.jsonCodec != "" {
		h.Set(jsoncodec.Header, c.jsonCodec)
	}
	o := &websocket.DialOptions{HTTPClient: c.ws.http, HTTPHeader: h}
	if sub != "" {
		o.Subprotocols = []string{sub}
	}
	ws, resp, err := websocket.Dial(ctx, u.String()+path, o)
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, call.HTTPStatus(resp.StatusCode, "WebSocket upgrade of "+path+": "+resp.Status)
		}
		return nil, err
	}
	c.ws.mu.Lock()
	c.ws.open[ws] = true
	c.ws.mu.Unlock()
	return ws, nil
}

// closeWS ends a WebSocket: with a close handshake (normal) or at once.
func (c *client) closeWS(ws *websocket.Conn, normal bool) error {
	c.ws.mu.Lock()
	delete(c.ws.open, ws)
	c.ws.mu.Unlock()
	if normal {
		return ws.Close(websocket.StatusNormalClosure, "")
	}
	return ws.CloseNow()
}

// closeStreams closes the WebSockets still open.
func (s *streams) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ws := range s.open {
		ws.CloseNow()
	}
	clear(s.open)
}

// wsError is the error of a WebSocket read or write: a close from the
// server with an error code (its code and reason in the message) is of
// class protocol.
func wsError(err error) error {
	if code := websocket.CloseStatus(err); code != -1 && code != websocket.StatusNormalClosure {
		return &call.Error{Class: results.ClassProtocol, Err: err}
	}
	return err
}

// chat: one message a call over a WebSocket, answered in the same frame
// type; the latency is the round trip on the client's clock.
type chat struct {
	c       *client
	st      call.Stream
	ws      *websocket.Conn
	isProto bool
	jc      *jsoncodec.Codec
	seq     uint64
	jm      data.ChatMessage
	pm, in  *pb.ChatMessage
}

func (a *chat) Call(ctx context.Context) (call.Outcome, error) {
	setup, err := a.st.Open(func() error { return a.c.closeWS(a.ws, true) }, func(sctx context.Context) (err error) {
		a.ws, err = a.c.dialWS(ctx, api.PathChat, "")
		return err
	})
	if err != nil {
		return call.Outcome{}, err
	}
	a.seq++
	sent := time.Now().UnixNano()
	var b []byte
	typ := websocket.MessageText
	if a.isProto {
		typ = websocket.MessageBinary
		a.pm.Seq, a.pm.SentUnixNano = a.seq, sent
		b, err = proto.Marshal(a.pm)
	} else {
		b, err = a.jc.Marshal(&data.ChatMessage{Seq: a.seq, SentUnixNano: sent, Text: data.ChatText})
	}
	if err == nil {
		err = a.ws.Write(ctx, typ, b)
	}
	if err != nil {
		return call.Outcome{}, a.fail(err)
	}
	got, ans, err := a.ws.Read(ctx)
	if err != nil {
		return call.Outcome{}, a.fail(err)
	}
	a.st.Done++
	var seq uint64
	var echoed int64
	var text string
	if got != typ {
		err = call.Invalid("chat: a %v answer to a %v message", got, typ)
	} else if a.isProto {
		if err = proto.Unmarshal(ans, a.in); err == nil {
			seq, echoed, text = a.in.GetSeq(), a.in.GetSentUnixNano(), a.in.GetText()
		}
	} else {
		a.jm = data.ChatMessage{}
		if err = a.jc.Unmarshal(ans, &a.jm); err == nil {
			seq, echoed, text = a.jm.Seq, a.jm.SentUnixNano, a.jm.Text
		}
	}
	if err == nil && (seq != a.seq || echoed != sent || text != data.ChatText) {
		err = call.Invalid("chat: answer seq %d sent %d, want %d sent %d", seq, echoed, a.seq, sent)
	}
	if err != nil {
		a.c.closeWS(a.ws, false)
		a.st.Close()
		return call.Outcome{}, call.Invalid("chat: %v", err)
	}
	return call.Outcome{Setup: setup}, nil
}

// fail ends the WebSocket after an error.
func (a *chat) fail(err error) error {
	a.c.closeWS(a.ws, false)
	a.st.Close()
	return wsError(err)
}

// feed: one record a call as the server pushes them over a WebSocket; the
// latency is from the server's stamp.
type feed struct {
	c       *client
	st      call.Stream
	ws      *websocket.Conn
	isProto bool
	jc      *jsoncodec.Codec
	want    *call.Records
	path    string
	in      *pb.MeteoriteLanding
}

func (a *feed) Call(ctx context.Context) (call.Outcome, error) {
	setup, err := a.st.Open(a.end, func(sctx context.Context) (err error) {
		sub := ""
		if a.isProto {
			sub = api.SubprotocolProtobuf
		}
		a.ws, err = a.c.dialWS(ctx, a.path, sub)
		return err
	})
	if err != nil {
		return call.Outcome{}, err
	}
	typ, b, err := a.ws.Read(ctx)
	now := time.Now()
	if err != nil {
		a.c.closeWS(a.ws, false)
		a.st.Close()
		if websocket.CloseStatus(err) == websocket.StatusNormalClosure {
			return call.Outcome{}, a.want.CheckCount(a.st.Done)
		}
		return call.Outcome{}, wsError(err)
	}
	var id uint32
	var stamp int64
	switch {
	case a.isProto && typ == websocket.MessageBinary:
		if err = proto.Unmarshal(b, a.in); err == nil {
			id, stamp = a.in.GetId(), a.in.GetSentUnixNano()
		}
	case !a.isProto && typ == websocket.MessageText:
		var r data.FeedRecord
		if err = a.jc.Unmarshal(b, &r); err == nil {
			id, stamp = r.ID, r.SentUnixNano
		}
	default:
		err = fmt.Errorf("a %v frame", typ)
	}
	if err == nil {
		err = a.want.CheckID(a.st.Done, id)
	}
	sent := time.Unix(0, stamp)
	if err == nil && (stamp == 0 || sent.After(now)) {
		err = call.Invalid("feed: record %d stamped %d, after its receipt: the server's clock is not this machine's (feed latency is measured from the server's stamp)", a.st.Done, stamp)
	}
	if err != nil {
		a.c.closeWS(a.ws, false)
		a.st.Close()
		if _, ok := err.(*call.Error); ok {
			return call.Outcome{}, err
		}
		return call.Outcome{}, call.Invalid("feed: record %d: %v", a.st.Done, err)
	}
	a.st.Done++
	return call.Outcome{Setup: setup, Sent: sent}, nil
}

// end reads the server's normal close after a feed's last record.
func (a *feed) end() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err := a.ws.Read(ctx)
	a.c.closeWS(a.ws, false)
	if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		if err == nil {
			return a.want.CheckCount(a.st.Done + 1)
		}
		return wsError(err)
	}
	return nil
}

// upload: one record a call into a chunked POST; the stream's last
// record's call closes the body and waits for "SUCCESS". Its setup waits
// until the transport has sent the request's headers and asks for the
// body (so the connection's dial is the setup's, not the first record's).
type upload struct {
	c       *client
	st      call.Stream
	req     *http.Request
	ls      []data.Landing
	isProto bool
	jc      *jsoncodec.Codec
	pw      *io.PipeWriter
	answer  chan uploadAnswer
	buf     bytes.Buffer
}

type uploadAnswer struct {
	body []byte
	err  error
}

// firstRead closes ready on the body's first Read: the transport has
// written the request's headers.
type firstRead struct {
	io.Reader
	ready chan struct{}
	once  sync.Once
}

func (f *firstRead) Read(p []byte) (int, error) {
	f.once.Do(func() { close(f.ready) })
	return f.Reader.Read(p)
}

func (a *upload) Call(ctx context.Context) (call.Outcome, error) {
	setup, err := a.st.Open(func() error { return nil }, a.start)
	if err != nil {
		return call.Outcome{}, err
	}
	defer a.st.Guard(ctx)()
	a.buf.Reset()
	l := &a.ls[a.st.Done%len(a.ls)]
	if a.isProto {
		b, err := proto.Marshal(l.Proto())
		if err != nil {
			return call.Outcome{}, err
		}
		a.buf.Write(protowire.AppendVarint(a.buf.AvailableBuffer(), uint64(len(b))))
		a.buf.Write(b)
	} else if err := a.jc.NewEncoder(&a.buf).Encode(l); err != nil {
		return call.Outcome{}, err
	}
	if _, err := a.pw.Write(a.buf.Bytes()); err != nil {
		a.st.Close()
		return call.Outcome{}, a.result(ctx, err)
	}
	a.st.Done++
	if a.st.Done < a.st.N {
		return call.Outcome{Setup: setup}, nil
	}
	a.pw.Close()
	err = a.result(ctx, nil)
	a.st.Close()
	return call.Outcome{Setup: setup}, err
}

// start begins the POST: the transport sends it in a goroutine of its
// own, reading the body from a pipe the calls write.
func (a *upload) start(sctx context.Context) error {
	pr, pw := io.Pipe()
	body := &firstRead{Reader: pr, ready: make(chan struct{})}
	req := a.req.WithContext(sctx)
	req.Body, req.ContentLength = io.NopCloser(body), -1
	a.pw, a.answer = pw, make(chan uploadAnswer, 1)
	answer := a.answer
	go func() {
		var buf bytes.Buffer
		resp, err := a.c.do(req, a.req.Header.Get("Accept"))
		if err == nil {
			err = ReadBody(&buf, resp)
		}
		pr.CloseWithError(fmt.Errorf("the upload ended: %v", err))
		answer <- uploadAnswer{buf.Bytes(), err}
	}()
	select {
	case <-body.ready:
		return nil
	case ans := <-answer:
		answer <- ans
		return a.result(sctx, ans.err)
	}
}

// result waits for the upload's answer and checks it; werr is the write
// that failed, if one did (the answer says why, when there is one).
func (a *upload) result(ctx context.Context, werr error) error {
	select {
	case ans := <-a.answer:
		if ans.err != nil {
			return ans.err
		}
		if werr != nil {
			return werr
		}
		if a.isProto {
			var st pb.StatusResponse
			if err := proto.Unmarshal(ans.body, &st); err != nil {
				return call.Invalid("upload: answer: %v", err)
			}
			return call.CheckString(st.GetStatus(), data.Success)
		}
		var s string
		if err := a.jc.Unmarshal(ans.body, &s); err != nil {
			return call.Invalid("upload: answer %q: %v", ans.body, err)
		}
		return call.CheckString(s, data.Success)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sseFeed: the feed as Server-Sent Events, one "data:" event a call, over
// the client's HTTP/1.1 transport; the latency is from the server's stamp.
type sseFeed struct {
	c    *client
	st   call.Stream
	jc   *jsoncodec.Codec
	want *call.Records
	path string
	resp *http.Response
	br   *bufio.Reader
}

func (a *sseFeed) Call(ctx context.Context) (call.Outcome, error) {
	setup, err := a.st.Open(a.end, func(sctx context.Context) error {
		u := *a.c.root
		req := a.c.template(http.MethodGet, api.PathFeed, api.TypeEventStream, "")
		req.URL, _ = u.Parse(a.path)
		resp, err := a.c.do(req.WithContext(sctx), api.TypeEventStream)
		if err != nil {
			return err
		}
		a.resp, a.br = resp, resetReader(a.br, resp.Body)
		return nil
	})
	if err != nil {
		return call.Outcome{}, err
	}
	defer a.st.Guard(ctx)()
	ev, err := a.event()
	now := time.Now()
	if err != nil {
		a.close()
		if err == io.EOF {
			return call.Outcome{}, a.want.CheckCount(a.st.Done)
		}
		return call.Outcome{}, err
	}
	var r data.FeedRecord
	if err := a.jc.Unmarshal(ev, &r); err != nil {
		a.close()
		return call.Outcome{}, call.Invalid("feed: event %d: %v", a.st.Done, err)
	}
	if err := a.want.CheckID(a.st.Done, r.ID); err != nil {
		a.close()
		return call.Outcome{}, err
	}
	sent := time.Unix(0, r.SentUnixNano)
	if r.SentUnixNano == 0 || sent.After(now) {
		a.close()
		return call.Outcome{}, call.Invalid("feed: record %d stamped %d, after its receipt: the server's clock is not this machine's (feed latency is measured from the server's stamp)", a.st.Done, r.SentUnixNano)
	}
	a.st.Done++
	return call.Outcome{Setup: setup, Sent: sent}, nil
}

// event reads the next event's data (one "data:" line, then a blank line).
func (a *sseFeed) event() ([]byte, error) {
	var ev []byte
	for {
		line, err := a.br.ReadSlice('\n')
		if err != nil {
			if err == io.EOF && len(line) == 0 && ev == nil {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("feed: reading an event: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0 && ev != nil:
			return ev, nil
		case bytes.HasPrefix(line, []byte("data:")):
			ev = append(ev[:0], bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		}
	}
}

// end reads the end of a feed after its last event.
func (a *sseFeed) end() error {
	_, err := a.event()
	a.close()
	if err == io.EOF {
		return nil
	}
	if err == nil {
		return a.want.CheckCount(a.st.Done + 1)
	}
	return err
}

func (a *sseFeed) close() {
	if a.resp != nil {
		a.resp.Body.Close()
		a.resp = nil
	}
	a.st.Close()
}
