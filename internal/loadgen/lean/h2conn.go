package lean

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Flow control. The lean client grants recvWindow on the connection and on
// every stream from the start and tops a window up when a quarter of it has
// been consumed, as grpc-go's client does; grpc-go starts at 64 KiB and
// grows its windows by BDP estimation (up to 16 MiB), which on loopback and
// on any link the harness emulates reaches more than any one answer of the
// contract needs in flight. A fixed window large enough from the start
// saves the BDP pings and lets no answer wait for a window update.
const recvWindow = 4 << 20

// h2conn is one HTTP/2 connection of the lean gRPC client: callers write
// their requests' frames (under wmu, in stream order), and one reader
// goroutine reads every frame, hands each stream's answer to the caller
// waiting for it, and answers the peer's SETTINGS, PING and flow control.
type h2conn struct {
	nc net.Conn
	fr *http2.Framer // ReadFrame: the reader; Write*: under wmu

	wmu    sync.Mutex // frames written, henc, blocks, nextID, wbuf
	henc   *hpack.Encoder
	hbuf   bytes.Buffer
	epoch  uint64             // bumped whenever an encoding may have changed the dynamic table
	blocks map[*method]*block // header blocks valid while their epoch is current
	nextID uint32
	wbuf   []byte

	mu       sync.Mutex
	cond     *sync.Cond // a send window grew, a stream ended or the connection did
	streams  map[uint32]*stream
	sendWin  int64 // the connection's send window
	peerWin  int64 // the peer's SETTINGS_INITIAL_WINDOW_SIZE
	maxFrame int   // the peer's SETTINGS_MAX_FRAME_SIZE
	// active counts the streams open or about to be (reserved before
	// wmu), at most maxStreams, the peer's SETTINGS_MAX_CONCURRENT_STREAMS.
	active, maxStreams int
	goaway             bool  // no new stream: the peer is going away
	err                error // why the connection ended; nil while it lives

	// The reader's own.
	dec      *hpack.Decoder
	cur      *stream // whose header block is being decoded (nil: none of ours)
	contEnd  bool    // the HEADERS being continued ended its stream
	unacked  int     // bytes received on the connection, not yet granted back
	bdpOut   bool    // a BDP ping is out, not yet acknowledged
	pendingW []control
	cbuf     []byte // the control frames being written
}

// block is a method's header block as the connection's encoder last wrote
// it: sent again as is while no encoding has changed the dynamic table.
type block struct {
	epoch uint64
	b     []byte
}

// stream is one call's stream; each caller reuses its own.
type stream struct {
	id         uint32
	sendWin    int64
	unacked    int
	body       []byte // the DATA received: length-prefixed messages
	httpStatus int
	grpcStatus int // -1: no grpc-status
	grpcMsg    string
	typeOK     bool
	ended      bool
	err        error
	done       chan struct{} // one token when the stream ended
}

// control is a frame the reader owes the peer, written after it let go of mu.
type control struct {
	kind uint8 // 'w' window update, 'p' ping ack, 'b' BDP ping, 's' settings ack
	id   uint32
	n    uint32
	ping [8]byte
}

func dialH2(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), addr string) (*h2conn, error) {
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &h2conn{
		nc: nc, blocks: map[*method]*block{}, nextID: 1,
		streams: map[uint32]*stream{}, sendWin: 65535, peerWin: 65535, maxFrame: 16384, maxStreams: math.MaxInt,
	}
	c.cond = sync.NewCond(&c.mu)
	c.henc = hpack.NewEncoder(&c.hbuf)
	c.dec = hpack.NewDecoder(4096, c.emit)
	c.fr = http2.NewFramer(nc, bufio.NewReaderSize(nc, bufSize))
	c.fr.SetReuseFrames()
	if _, err := nc.Write([]byte(http2.ClientPreface)); err == nil {
		err = c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: recvWindow})
		if err == nil {
			err = c.fr.WriteWindowUpdate(0, recvWindow-65535)
		}
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	go c.read()
	return c, nil
}

// usable reports whether a new stream may start on the connection.
func (c *h2conn) usable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err == nil && !c.goaway
}

// close ends the connection and every stream on it.
func (c *h2conn) close(err error) {
	c.mu.Lock()
	c.failLocked(err)
	c.mu.Unlock()
}

func (c *h2conn) failLocked(err error) {
	if c.err == nil {
		c.err = err
		c.nc.Close()
	}
	for id, s := range c.streams {
		c.endLocked(id, s, err)
	}
	c.cond.Broadcast()
}

// endLocked ends a stream: its caller is told.
func (c *h2conn) endLocked(id uint32, s *stream, err error) {
	delete(c.streams, id)
	c.active--
	c.cond.Broadcast() // a stream slot is free
	s.ended, s.err = true, err
	select {
	case s.done <- struct{}{}:
	default:
	}
}

// headerBlock is m's header block, encoded by the connection's encoder
// (under wmu, in the order the blocks are sent). An encoding that is the
// same bytes as the last one changed nothing in the dynamic table: it is
// kept and sent as is until another encoding may have changed the table.
func (c *h2conn) headerBlock(m *method) []byte {
	b := c.blocks[m]
	if b != nil && b.epoch == c.epoch {
		return b.b
	}
	c.hbuf.Reset()
	for _, f := range m.fields {
		c.henc.WriteField(f)
	}
	if b == nil {
		b = &block{}
		c.blocks[m] = b
	}
	if bytes.Equal(c.hbuf.Bytes(), b.b) {
		b.epoch = c.epoch
	} else {
		c.epoch++ // literals may have been added: every kept block is stale
		b.epoch = c.epoch - 1
		b.b = append(b.b[:0], c.hbuf.Bytes()...)
	}
	return c.hbuf.Bytes()
}

// send opens stream s for method m and writes the request: HEADERS and as
// much of the message as the send windows allow in one write, the rest as
// the peer grants window.
func (c *h2conn) send(ctx context.Context, s *stream, m *method) error {
	msg := m.msg
	if err := c.reserve(ctx); err != nil {
		return err
	}
	c.wmu.Lock()
	c.mu.Lock()
	if c.err != nil || c.goaway {
		err := c.err
		c.active--
		c.mu.Unlock()
		c.wmu.Unlock()
		if err == nil {
			err = errors.New("connection going away")
		}
		return err
	}
	s.id = c.nextID
	c.nextID += 2
	s.sendWin = c.peerWin
	c.streams[s.id] = s
	n := c.grantLocked(s, len(msg))
	maxFrame := c.maxFrame
	c.mu.Unlock()
	hb := c.headerBlock(m)
	w := appendFrame(c.wbuf[:0], http2.FrameHeaders, http2.FlagHeadersEndHeaders, s.id, hb)
	w = appendData(w, s.id, msg[:n], maxFrame, n == len(msg))
	c.wbuf = w
	_, err := c.nc.Write(w)
	c.wmu.Unlock()
	if err != nil {
		c.close(err)
		return err
	}
	if n < len(msg) {
		return c.sendRest(ctx, s, msg[n:])
	}
	return nil
}

// reserve waits for a stream slot under the peer's
// SETTINGS_MAX_CONCURRENT_STREAMS (as grpc-go's client queues its calls)
// and takes it.
func (c *h2conn) reserve(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active >= c.maxStreams {
		stop := context.AfterFunc(ctx, func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
		defer stop()
		for c.active >= c.maxStreams && c.err == nil && !c.goaway {
			if err := ctx.Err(); err != nil {
				return err
			}
			c.cond.Wait()
		}
	}
	c.active++
	return nil
}

// grantLocked takes up to want bytes of the connection's and s's send
// windows.
func (c *h2conn) grantLocked(s *stream, want int) int {
	n := int(min(int64(want), c.sendWin, s.sendWin))
	if n < 0 {
		n = 0
	}
	c.sendWin -= int64(n)
	s.sendWin -= int64(n)
	return n
}

// sendRest writes the rest of a request message as the peer grants window.
func (c *h2conn) sendRest(ctx context.Context, s *stream, rest []byte) error {
	stop := context.AfterFunc(ctx, func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
	defer stop()
	for len(rest) > 0 {
		c.mu.Lock()
		n := 0
		for c.err == nil && !s.ended && ctx.Err() == nil {
			if n = c.grantLocked(s, len(rest)); n > 0 {
				break
			}
			c.cond.Wait()
		}
		maxFrame := c.maxFrame
		c.mu.Unlock()
		if n == 0 {
			return nil // the stream or the connection ended, or the call did: the wait says why
		}
		c.wmu.Lock()
		c.wbuf = appendData(c.wbuf[:0], s.id, rest[:n], maxFrame, n == len(rest))
		_, err := c.nc.Write(c.wbuf)
		c.wmu.Unlock()
		if err != nil {
			c.close(err)
			return err
		}
		rest = rest[n:]
	}
	return nil
}

// cancel resets a stream whose call ended before its answer did.
func (c *h2conn) cancel(s *stream) {
	c.mu.Lock()
	_, open := c.streams[s.id]
	if open {
		c.endLocked(s.id, s, context.Canceled)
	}
	c.mu.Unlock()
	if open {
		c.wmu.Lock()
		c.fr.WriteRSTStream(s.id, http2.ErrCodeCancel)
		c.wmu.Unlock()
	}
}

// appendFrame appends one frame.
func appendFrame(w []byte, t http2.FrameType, flags http2.Flags, id uint32, p []byte) []byte {
	n := len(p)
	w = append(w, byte(n>>16), byte(n>>8), byte(n), byte(t), byte(flags))
	w = binary.BigEndian.AppendUint32(w, id&(1<<31-1))
	return append(w, p...)
}

// appendData appends p as DATA frames of at most maxFrame bytes, the last
// one ending the stream when end is set.
func appendData(w []byte, id uint32, p []byte, maxFrame int, end bool) []byte {
	for first := true; first || len(p) > 0; first = false {
		n := min(len(p), maxFrame)
		var flags http2.Flags
		if end && n == len(p) {
			flags = http2.FlagDataEndStream
		}
		w = appendFrame(w, http2.FrameData, flags, id, p[:n])
		p = p[n:]
	}
	return w
}

// errNoTrailers is a stream that ended without grpc-status.
var errNoTrailers = fmt.Errorf("stream ended without trailers")
