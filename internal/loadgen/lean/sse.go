package lean

// The feed as Server-Sent Events over the lean HTTP/1.1 client: a GET
// with Accept: text/event-stream, whose chunked answer is read as it
// arrives, one "data:" event a call; the latency is from the server's
// stamp. The connection is kept for the next stream when the answer ends
// cleanly and allows it (as net/http's transport keeps it).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// maxEvent bounds an event's line: as a WebSocket message.
const maxEvent = maxWSMessage

// errEventCut is an event stream that ended inside an event.
var errEventCut = errors.New("feed: the event stream ended inside an event")

type sseFeed struct {
	*streamBase
	req  []byte // the GET, as net/http writes it
	jc   *jsoncodec.Codec
	want *call.Records
	r    data.FeedRecord

	// The answer being read: its head, the bytes left of its current
	// chunk (or of its Content-Length), whether a chunk's CRLF is due,
	// and its end; pend[pr:] is de-chunked body not parsed yet.
	hd      head
	left    int
	inChunk bool
	eof     bool
	pend    []byte
	pr      int
	ev      []byte // the event's data
}

// Call implements call.Caller.
func (a *sseFeed) Call(ctx context.Context) (call.Outcome, error) {
	return a.CallBy(ctx, deadlineOf(ctx))
}

// CallBy implements call.DeadlineCaller.
func (a *sseFeed) CallBy(ctx context.Context, deadline time.Time) (call.Outcome, error) {
	return a.run(ctx, deadline, a.message)
}

func (a *sseFeed) message(ctx context.Context, deadline time.Time) (call.Outcome, error) {
	setup, err := a.st.Open(a.end, func(context.Context) error { return a.open(ctx, deadline) })
	if err != nil {
		a.drop()
		return call.Outcome{}, err
	}
	h := a.conn.Load()
	ev, err := a.event(h)
	now := time.Now()
	if err != nil {
		if err == io.EOF {
			done := a.st.Done
			a.fail(nil)
			return call.Outcome{}, a.want.CheckCount(done)
		}
		return a.fail(err)
	}
	a.r = data.FeedRecord{}
	if err := a.jc.Unmarshal(ev, &a.r); err != nil {
		return a.fail(call.Invalid("feed: event %d: %v", a.st.Done, err))
	}
	sent, err := a.checkRecord(a.want, a.r.ID, a.r.SentUnixNano, now)
	if err != nil {
		return a.fail(err)
	}
	return call.Outcome{Setup: setup, Sent: sent}, nil
}

// open sends the GET and reads the answer's head: a 200 event stream.
func (a *sseFeed) open(ctx context.Context, deadline time.Time) error {
	h, err := a.connect(ctx, deadline)
	if err != nil {
		return err
	}
	a.pend, a.pr, a.eof, a.inChunk = a.pend[:0], 0, false, false
	if err := h.send(a.req); err != nil {
		a.drop()
		return err
	}
	a.hd, err = h.readHead(api.TypeEventStream)
	if err != nil {
		a.drop()
		return err
	}
	if !a.hd.chunked && a.hd.length < 0 {
		a.drop()
		return framing("no Content-Length and not chunked")
	}
	if a.hd.status != http.StatusOK || !a.hd.typeOK || a.hd.coded {
		var body []byte
		if a.hd.status != http.StatusOK {
			body, _ = h.readBody(nil, a.hd)
		}
		a.drop()
		_, err := restReply(api.TypeEventStream)(replyOf(a.hd, body))
		return err
	}
	a.left = max(a.hd.length, 0)
	return nil
}

// event reads the next event's data (a "data:" line, then a blank line),
// valid until the next; io.EOF at the end of the stream between events.
func (a *sseFeed) event(h *h1conn) ([]byte, error) {
	have := false
	for {
		if i := bytes.IndexByte(a.pend[a.pr:], '\n'); i >= 0 {
			line := bytes.TrimSuffix(a.pend[a.pr:a.pr+i], []byte{'\r'})
			a.pr += i + 1
			switch {
			case len(line) == 0 && have:
				return a.ev, nil
			case bytes.HasPrefix(line, []byte("data:")):
				a.ev = append(a.ev[:0], bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
				have = true
			}
			continue
		}
		if a.eof {
			if !have && a.pr == len(a.pend) {
				return nil, io.EOF
			}
			return nil, errEventCut
		}
		if a.pr > 0 {
			a.pend = a.pend[:copy(a.pend, a.pend[a.pr:])]
			a.pr = 0
		}
		if len(a.pend) > maxEvent {
			return nil, framing("an event line over %d bytes", maxEvent)
		}
		if err := a.more(h); err != nil {
			return nil, err
		}
	}
}

// more appends the body's next bytes to pend, de-chunked; at the body's
// end it sets eof. The connection's end before the body's is an error
// (io.ErrUnexpectedEOF), never the stream's end.
func (a *sseFeed) more(h *h1conn) error {
	err := a.moreOf(h)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	var ce *call.Error
	if err != nil && !errors.As(err, &ce) {
		err = fmt.Errorf("feed: reading an event: %w", err)
	}
	return err
}

func (a *sseFeed) moreOf(h *h1conn) error {
	if a.left == 0 {
		if !a.hd.chunked {
			a.eof = true
			return nil
		}
		if a.inChunk { // the CRLF after a chunk's data
			l, err := h.line()
			if err != nil {
				return err
			}
			if len(l) != 0 {
				return framing("chunk longer than its size")
			}
			a.inChunk = false
		}
		l, err := h.line()
		if err != nil {
			return err
		}
		l, _, _ = bytes.Cut(l, []byte{';'})
		n, err := hexSize(bytes.TrimSpace(l))
		if err != nil {
			return framing("bad chunk size %q", clip(l))
		}
		if n == 0 {
			for size := 0; ; { // trailers, up to the empty line
				if l, err = h.line(); err != nil {
					return err
				}
				if len(l) == 0 {
					a.eof = true
					return nil
				}
				if size += len(l) + 2; size > maxHead {
					return framing("trailers over %d bytes, without end", maxHead)
				}
			}
		}
		a.left, a.inChunk = n, true
	}
	if h.r == h.w {
		if err := h.fill(); err != nil {
			return err
		}
	}
	k := min(a.left, h.w-h.r)
	a.pend = append(a.pend, h.buf[h.r:h.r+k]...)
	h.r += k
	a.left -= k
	return nil
}

// end reads the end of a feed after its last event; a clean end keeps the
// connection, unless the answer closes it.
func (a *sseFeed) end() error {
	_, err := a.event(a.conn.Load())
	if err == io.EOF && !a.hd.close {
		return nil
	}
	a.drop()
	if err == io.EOF {
		return nil
	}
	if err == nil {
		return a.want.CheckCount(a.st.Done + 1)
	}
	return err
}
