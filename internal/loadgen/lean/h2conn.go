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
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/results"
)

// Flow control. The lean client grants recvWindow on the connection and on
// every stream from the start and tops a window up when a quarter of it has
// been consumed, as grpc-go's client does; grpc-go starts at 64 KiB and
// grows its windows by BDP estimation (up to 16 MiB), which on loopback and
// on any link the harness emulates reaches more than any one answer of the
// contract needs in flight. A fixed window large enough from the start
// saves the BDP pings and lets no answer wait for a window update.
const recvWindow = 4 << 20

// The limits the lean client holds the peer to, as grpc-go's client does
// (RFC 9113; grpc-go's defaults):
//   - maxReadFrame: the largest frame read, the SETTINGS_MAX_FRAME_SIZE the
//     client advertises (it advertises none: the protocol's 16 KiB, which is
//     also grpc-go's);
//   - maxHeaderList: a header block's decoded size (each field's name and
//     value plus 32, RFC 9113 6.5.2), its encoded bytes over HEADERS and
//     CONTINUATION frames (9 bytes a frame counted, so that empty
//     CONTINUATIONs end too), and any one hpack string: grpc-go's default
//     MaxHeaderListSize, 16 MiB. The block is decoded as it arrives and
//     never kept whole.
//   - maxOwed: control frames the peer's frames owe it (SETTINGS and PING
//     acknowledgements, window updates, resets) not yet written because the
//     peer does not read: a flood of them past this is a connection error.
//   - controlWriteTimeout: a write of the control frames owed that makes no
//     progress for this long ends the connection (errWriteStalled): the
//     peer stopped reading. A slow link still drains the socket within it
//     (the peer's flow-control windows bound what is buffered); a write
//     that makes some progress goes on, with the deadline renewed.
//   - batchBytes: a request message this large is written by its caller at
//     once, not batched (flush): large messages are not held in memory
//     together; frames queued past it are written from where they were
//     queued.
//   - goAwayGrace: the time a GOAWAY the client owes a peer that broke the
//     protocol may take to write before the connection closes anyway.
//   - maxStreamID: the last stream ID; a connection that used it is
//     retired (no new stream; a new connection takes the next call) and
//     closed when its last stream ends.
const (
	maxReadFrame  = 16 << 10
	maxHeaderList = 16 << 20
	maxOwed       = 4096
	maxStreamID   = 1<<31 - 1
	maxWindow     = 1<<31 - 1

	controlWriteTimeout = 2 * time.Second
	batchBytes          = 64 << 10
	goAwayGrace         = 100 * time.Millisecond
)

// h2conn is one HTTP/2 connection of the lean gRPC client, with two
// goroutines of its own and its callers:
//   - the reader reads every frame, hands each stream's answer to the
//     caller waiting for it, and queues (under mu, at most maxOwed) the
//     control frames the peer's frames owe it: SETTINGS and PING
//     acknowledgements, window updates, resets. It never writes, so a peer
//     that stops reading cannot stop it reading.
//   - the writer (writeLoop) writes the control frames owed (flush), each
//     write bounded by controlWriteTimeout, and the GOAWAY owed to a peer
//     that broke the protocol.
//   - callers queue their requests' frames (pend, under wmu, in stream
//     order) and write them themselves: the first caller to queue after a
//     write lets the other callers ready to run queue theirs
//     (runtime.Gosched), then writes them all with the control frames owed
//     (flush, under xmu). A request costs no hand-over to
//     another goroutine, and one write carries the requests of every
//     caller an answer woke, as h2load and grpc-go's loopy batch theirs (a
//     write on loopback was 60% of the client's CPU when each request had
//     its own). A caller waiting for wmu or xmu, or inside a write, when
//     its deadline passes closes the connection (expire), which ends the
//     stalled write, so no write outlives the deadline of the call that
//     made it by more than the watchdog's period.
type h2conn struct {
	nc  net.Conn
	fr  *http2.Framer // ReadFrame: the reader; Write*: the dial's, before the goroutines start
	tap *headerTap    // the last frame header read, to name the frame a read error is about

	xmu sync.Mutex // the socket's writes, in the order their frames were queued; out
	out []byte     // the frames being written

	wmu      sync.Mutex // the frames queued (pend, flushing), henc, blocks, epoch, nextID
	pend     []byte     // frames queued, not yet written
	flushing bool       // a caller that queued frames will write pend (flush)
	henc     *hpack.Encoder
	hbuf     bytes.Buffer
	tbuf     []byte             // a header block with its grpc-timeout (headerBlock)
	epoch    uint64             // bumped whenever an encoding may have changed the dynamic table
	blocks   map[*method]*block // header blocks valid while their epoch is current
	nextID   uint32
	wake     chan struct{} // the writer's: control frames owed, or the connection ended

	mu       sync.Mutex
	cond     *sync.Cond // a send window grew, a stream ended or the connection did
	streams  map[uint32]*stream
	sendWin  int64 // the connection's send window
	peerWin  int64 // the peer's SETTINGS_INITIAL_WINDOW_SIZE, as acknowledged
	maxFrame int   // the peer's SETTINGS_MAX_FRAME_SIZE, as acknowledged
	// nextWin and nextFrame: those of the last SETTINGS read, applied
	// when its ACK is queued for writing (ackSettingsLocked).
	nextWin   int64
	nextFrame int
	// table is the peer's SETTINGS_HEADER_TABLE_SIZE, the most the
	// encoder's dynamic table may hold; tableNew: not yet applied to the
	// encoder (the next header block encoded applies it, under wmu).
	table    uint32
	tableNew bool
	// active counts the streams open or about to be (reserved before
	// wmu), at most maxStreams, the peer's SETTINGS_MAX_CONCURRENT_STREAMS.
	active, maxStreams int
	goaway             bool          // no new stream: the peer is going away
	goawayCode         http2.ErrCode // the GOAWAY's error code
	retired            bool          // no new stream: the stream IDs are used up, or the client replaced it
	draining           bool          // closed when its last stream ends
	err                error         // why the connection ended; nil while it lives
	recvAvail          int64         // the connection's receive window: what the peer may still send
	ctl                []control     // frames owed to the peer, not yet written
	goAwayOwed         bool          // the writer owes the peer a GOAWAY of goAwayOut before it closes
	goAwayOut          http2.ErrCode

	// The reader's own.
	dec     *hpack.Decoder
	cur     *stream // whose header block is being decoded (nil: none of ours)
	contEnd bool    // the HEADERS being continued ended its stream
	hblock  int     // bytes of the header block being read (9 per frame plus fragments)
	hlist   int     // its decoded size so far (RFC 9113 6.5.2)
	unacked int     // bytes received on the connection, not yet granted back
	bdpOut  bool    // a BDP ping is out, not yet acknowledged
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
	recvAvail  int64 // the stream's receive window: what the peer may still send
	unacked    int
	unary      bool   // its answer is one message: no window granted once it is whole
	pull       bool   // its messages are taken one by one as they come (next): its window is granted back as they are taken
	accept     string // the media type its answer must have ("": gRPC's, application/grpc*)
	coded      bool   // its answer names a content coding other than identity
	headed     bool   // its HEADERS came
	body       []byte // the DATA received: length-prefixed messages
	httpStatus int
	grpcStatus int // -1: no grpc-status
	grpcMsg    string
	typeOK     bool
	ended      bool
	late       bool      // its call's deadline passed while it waited to send (under mu)
	deadline   time.Time // its call's, sent as grpc-timeout when its method is timed (its caller's to set)
	err        error
	done       chan struct{} // a token when the stream ended (pull: or DATA came): wake
	inWrite    atomic.Bool   // its call waits for wmu or xmu, or writes
}

// control is a frame owed to the peer, written with the frames queued by
// whoever flushes next, the writer or a caller (flush, appendOwedLocked).
type control struct {
	kind uint8 // 'w' window update, 'p' ping ack, 'b' BDP ping, 's' settings ack, 'r' reset (n: code)
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
		nc: nc, blocks: map[*method]*block{}, nextID: 1, recvAvail: recvWindow, wake: make(chan struct{}, 1),
		streams: map[uint32]*stream{}, sendWin: 65535, peerWin: 65535, maxFrame: 16384, nextWin: 65535, nextFrame: 16384, maxStreams: math.MaxInt,
		table: 4096,
	}
	c.cond = sync.NewCond(&c.mu)
	c.henc = hpack.NewEncoder(&c.hbuf)
	c.dec = hpack.NewDecoder(4096, c.emit)
	c.dec.SetMaxStringLength(maxHeaderList)
	c.tap = &headerTap{r: bufio.NewReaderSize(nc, bufSize)}
	c.fr = http2.NewFramer(nc, c.tap)
	c.fr.SetReuseFrames()
	c.fr.SetMaxReadFrameSize(maxReadFrame)
	if _, err := nc.Write([]byte(http2.ClientPreface)); err == nil {
		// No server push (RFC 9113 6.5.2: a server must not push to a
		// client that said ENABLE_PUSH 0; grpc-go never pushes anyway).
		err = c.fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 0},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: recvWindow})
		if err == nil {
			err = c.fr.WriteWindowUpdate(0, recvWindow-65535)
		}
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	go c.read()
	go c.writeLoop()
	return c, nil
}

// headerTap keeps the last frame header the Framer read (it reads each
// one whole, 9 bytes), so that a read error can name its frame.
type headerTap struct {
	r    *bufio.Reader
	last [9]byte
	ok   bool
}

func (t *headerTap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if len(p) == 9 && n == 9 {
		copy(t.last[:], p)
		t.ok = true
	}
	return n, err
}

// frame names the last frame header read: "DATA frame of 20000 bytes on
// stream 3".
func (t *headerTap) frame() string {
	if !t.ok {
		return "a frame"
	}
	n := int(t.last[0])<<16 | int(t.last[1])<<8 | int(t.last[2])
	id := binary.BigEndian.Uint32(t.last[5:]) & maxStreamID
	return fmt.Sprintf("%v frame of %d bytes on stream %d", http2.FrameType(t.last[3]), n, id)
}

// h2Error is a connection or stream error of the peer's making, with the
// HTTP/2 error code the client answers it with.
type h2Error struct {
	code http2.ErrCode
	msg  string
}

func (e *h2Error) Error() string { return e.msg }

// protoErr is an error of class protocol: the peer broke HTTP/2.
func protoErr(code http2.ErrCode, format string, args ...any) error {
	return &call.Error{Class: results.ClassProtocol, Err: &h2Error{code: code, msg: fmt.Sprintf(format, args...)}}
}

// errRefused marks a stream the peer never processed (above a GOAWAY's
// last stream ID, reset with REFUSED_STREAM, or on a connection that went
// away before it was sent): its call is made again once, on a new
// connection, as grpc-go's client retries such calls transparently.
var errRefused = errors.New("not processed by the server")

type refusedError struct{ err error }

func (e *refusedError) Error() string        { return e.err.Error() }
func (e *refusedError) Unwrap() error        { return e.err }
func (e *refusedError) Is(target error) bool { return target == errRefused }

func refused(err error) error  { return &refusedError{err} }
func isRefused(err error) bool { return errors.Is(err, errRefused) }

// errWriteStalled ends a connection whose writes a call waited for past
// its deadline, or whose control frames could not be written within
// controlWriteTimeout: the peer stopped reading.
var errWriteStalled = errors.New("the server stopped reading: a write outlived a call's deadline or its own")

// usable reports whether a new stream may start on the connection.
func (c *h2conn) usable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err == nil && !c.goaway && !c.retired
}

// dead reports whether the connection ended.
func (c *h2conn) dead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil
}

// close ends the connection and every stream on it.
func (c *h2conn) close(err error) {
	c.mu.Lock()
	c.failLocked(err)
	c.mu.Unlock()
}

// closeErr ends the connection on a failed write and returns why it
// ended: the reader may have found the reason first (a GOAWAY with an
// error, a frame that broke the protocol).
func (c *h2conn) closeErr(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failLocked(err)
	return c.err
}

// drain retires the connection: no new stream, and it closes when its
// last stream ends (the streams on it go on to their answers).
func (c *h2conn) drain() {
	c.mu.Lock()
	c.retired, c.draining = true, true
	if c.active == 0 {
		c.failLocked(errors.New("replaced by a new connection"))
	}
	c.mu.Unlock()
}

func (c *h2conn) failLocked(err error) {
	if c.err == nil {
		if c.goawayCode != http2.ErrCodeNo && !isProtocol(err) {
			err = protoErr(c.goawayCode, "connection ended after GOAWAY %v from the server: %v", c.goawayCode, err)
		}
		c.err = err
		if c.goAwayOwed { // the writer writes it and closes; this closes if it cannot soon
			time.AfterFunc(goAwayGrace, func() { c.nc.Close() })
		} else {
			c.nc.Close()
		}
		c.signal() // the writer ends
	}
	for id, s := range c.streams {
		c.endLocked(id, s, c.err)
	}
	c.cond.Broadcast()
}

// isProtocol reports whether err is of class protocol.
func isProtocol(err error) bool {
	var ce *call.Error
	return errors.As(err, &ce) && ce.Class.Protocol()
}

// fatal ends the connection for an error of the peer's making; the writer
// tells the peer with a GOAWAY when the connection is free to write one
// within goAwayGrace.
func (c *h2conn) fatal(err error) {
	c.mu.Lock()
	var he *h2Error
	if errors.As(err, &he) && c.err == nil {
		c.goAwayOwed, c.goAwayOut = true, he.code
	}
	c.failLocked(err)
	c.mu.Unlock()
}

// endLocked ends a stream that is open: its caller is told, and the
// reader lets go of it (a header block of it still being decoded goes to
// no stream), so that its caller may reuse it for the next call at once.
func (c *h2conn) endLocked(id uint32, s *stream, err error) {
	if c.streams[id] != s {
		return // ended already: the caller may be on its next call with it
	}
	delete(c.streams, id)
	if c.cur == s {
		c.cur = nil
	}
	c.freeLocked()
	s.ended, s.err = true, err
	s.wake()
}

// wake leaves s's caller a token in done: its stream ended, or (a pull
// stream) DATA came. A token is never waited for under mu, and one is
// enough for any number of events: the caller looks at s under mu after
// taking it.
func (s *stream) wake() {
	select {
	case s.done <- struct{}{}:
	default:
	}
}

// freeLocked frees a stream slot; a draining connection closes with its
// last stream.
func (c *h2conn) freeLocked() {
	c.active--
	c.cond.Broadcast() // a stream slot is free
	if c.draining && c.active == 0 && c.err == nil {
		c.failLocked(errors.New("replaced by a new connection"))
	}
}

// expire is the watchdog's end of s's call while it waits to send: a wait
// for a stream slot or send window ends; a wait for wmu or xmu, or a
// write, ends the connection (errWriteStalled), since only a peer that
// stopped reading holds a write that long.
func (c *h2conn) expire(s *stream) {
	c.mu.Lock()
	s.late = true
	c.cond.Broadcast()
	c.mu.Unlock()
	if s.inWrite.Load() {
		c.close(errWriteStalled)
	}
}

// queueLocked owes the peer a control frame; false (and the connection
// failed) when the peer owes us the reading of too many already. The
// writer is told by whoever queued, once mu is let go (signal).
func (c *h2conn) queueLocked(o control) bool {
	if len(c.ctl) >= maxOwed {
		c.failLocked(protoErr(http2.ErrCodeEnhanceYourCalm, "%d frames owed to the server (SETTINGS or PING acknowledgements, window updates, resets) and it reads none of them", len(c.ctl)))
		return false
	}
	c.ctl = append(c.ctl, o)
	return true
}

// signal wakes the writer: control frames are owed, or the connection
// ended.
func (c *h2conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default: // woken already
	}
}

// writeLoop is the connection's writer: it writes the control frames owed
// that no caller's write carried first, and ends with the connection,
// writing the GOAWAY owed (within goAwayGrace) and closing it.
func (c *h2conn) writeLoop() {
	for range c.wake {
		c.mu.Lock()
		failed, goAway, code := c.err != nil, c.goAwayOwed, c.goAwayOut
		c.mu.Unlock()
		if failed {
			if goAway && c.xmu.TryLock() {
				c.nc.SetWriteDeadline(time.Now().Add(goAwayGrace))
				c.nc.Write(appendFrame(nil, http2.FrameGoAway, 0, 0, binary.BigEndian.AppendUint32(make([]byte, 4, 8), uint32(code))))
				c.xmu.Unlock()
			}
			c.nc.Close()
			return
		}
		// Yield once before writing, as grpc-go's loopy does before it
		// flushes: the reader woke the writer for the BDP ping and window
		// update a small answer's DATA owes, and a caller whose answer
		// ends with the trailers read next sends its next call now, which
		// carries them in its own write. Written alone, they were a write
		// and a TLS record more a call than grpc-go makes (through nginx
		// over TLS, 6.8 B more sent and 5.8 B more received a small call).
		runtime.Gosched()
		if err := c.flush(true); err != nil {
			c.close(err)
		}
	}
}

// queue notes that frames were queued (under wmu) and reports whether the
// caller is the one to write them (flush): no write was due yet.
func (c *h2conn) queue() (flusher bool) {
	flusher, c.flushing = !c.flushing, true
	return flusher
}

// handOff is a caller's part once its frames are queued (queue said
// whether it is the flusher): the flusher lets the other callers ready to
// run queue theirs, then writes them all in one write, or, lazy, leaves
// them to the writer; the others' frames go with the flusher's write.
func (c *h2conn) handOff(flusher, lazy bool) error {
	switch {
	case !flusher:
		return nil
	case lazy:
		c.signal()
		return nil
	}
	runtime.Gosched()
	return c.flush(false)
}

// flush writes the frames queued and the control frames owed, in one
// write, under xmu: the writes go in the order the frames were queued.
// The control frames go ahead of the requests, as a request written at
// once carried them and as grpc-go's loopy writes them (the server's
// answers to BDP pings come back as grpc-go's would), but resets go
// behind, after their streams' HEADERS; a large message (batchBytes) is
// written from where it was queued, the control frames behind it.
// control bounds the write by controlWriteTimeout (the writer's); a
// caller's write is bounded by its deadline (expire).
func (c *h2conn) flush(control bool) error {
	c.xmu.Lock()
	defer c.xmu.Unlock()
	return c.flushLocked(control)
}

// flushLocked is flush under xmu.
func (c *h2conn) flushLocked(control bool) error {
	c.wmu.Lock()
	c.mu.Lock()
	var w []byte
	if len(c.pend) < batchBytes {
		w = c.appendOwedLocked(c.out[:0], false)
		w = append(w, c.pend...)
		c.pend = c.pend[:0]
	} else {
		w, c.pend = c.pend, c.out[:0]
	}
	c.flushing = false
	w = c.appendOwedLocked(w, true)
	c.mu.Unlock()
	c.wmu.Unlock()
	c.out = w[:0]
	switch {
	case len(w) == 0:
		return nil
	case control:
		return c.writeControl(w)
	}
	_, err := c.nc.Write(w)
	return err
}

// writeControl writes control frames (under xmu), as long as the write
// makes progress within controlWriteTimeout.
func (c *h2conn) writeControl(w []byte) error {
	defer c.nc.SetWriteDeadline(time.Time{})
	for {
		c.nc.SetWriteDeadline(time.Now().Add(controlWriteTimeout))
		n, err := c.nc.Write(w)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return err
		case n == 0:
			return errWriteStalled
		}
		w = w[n:]
	}
}

// headerBlock is m's header block, then a grpc-timeout field when timeout
// is not "", encoded by the connection's encoder (under wmu, in the order
// the blocks are sent). An encoding of m's fields that is the same bytes
// as the last one changed nothing in the dynamic table: it is kept and
// sent as is until another encoding may have changed the table. The
// timeout comes last, encoded every call as grpc-go's encoder does (a
// value it has sent before is indexed; a new one is added to the table,
// which makes every kept block stale).
func (c *h2conn) headerBlock(m *method, timeout string) []byte {
	b := c.blocks[m]
	fixed := b != nil && b.epoch == c.epoch
	if !fixed {
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
	}
	if timeout == "" {
		return b.b
	}
	c.hbuf.Reset()
	c.henc.WriteField(hpack.HeaderField{Name: "grpc-timeout", Value: timeout})
	if t := c.hbuf.Bytes(); t[0]&0xc0 == 0x40 { // a literal with incremental indexing (RFC 7541 6.2.1)
		c.epoch++
	}
	c.tbuf = append(append(c.tbuf[:0], b.b...), c.hbuf.Bytes()...)
	return c.tbuf
}

// timeout is the grpc-timeout of s's request, "" when m is not timed: the
// time left to s's deadline now, when its HEADERS are encoded, as grpc-go
// writes it.
func (c *h2conn) timeout(m *method, s *stream) string {
	if !m.timed || s.deadline.IsZero() {
		return ""
	}
	return grpcTimeout(time.Until(s.deadline))
}

// send opens stream s for method m and writes the request: HEADERS and as
// much of the message as the send windows allow in one write, the rest as
// the peer grants window.
func (c *h2conn) send(ctx context.Context, s *stream, m *method) error {
	return c.start(ctx, s, m, m.msg, true, false)
}

// start opens stream s for method m and writes msg after its HEADERS, as
// send does; end says whether msg ends the client's side of the stream (a
// stream of the stream scenarios: not until its last message, and msg may
// be empty, the HEADERS alone). lazy hands the frames to the writer rather
// than writing them (a stream whose first message follows: grpc-go's
// headers leave with it).
func (c *h2conn) start(ctx context.Context, s *stream, m *method, msg []byte, end, lazy bool) error {
	if err := c.reserve(ctx, s); err != nil {
		return err
	}
	s.inWrite.Store(true)
	// A large message is written by its caller at once, under xmu from
	// before it is queued, so that no other large one joins it in memory.
	direct := len(msg) >= batchBytes
	if direct {
		c.xmu.Lock()
	}
	c.wmu.Lock()
	c.mu.Lock()
	if c.err != nil || c.goaway || c.retired || s.late {
		err, late, goaway, code, retired := c.err, s.late, c.goaway, c.goawayCode, c.retired
		c.freeLocked()
		c.mu.Unlock()
		c.wmu.Unlock()
		if direct {
			c.xmu.Unlock()
		}
		s.inWrite.Store(false)
		// A call never sent may be made again on another connection
		// when this one went away or was retired, not when it failed.
		switch {
		case late:
			return errDeadline
		case goaway:
			return refused(protoErr(code, "GOAWAY %v from the server before the call was sent", code))
		case retired:
			return refused(errors.New("connection retired before the call was sent"))
		}
		return err
	}
	s.id = c.nextID
	c.nextID += 2
	if c.nextID > maxStreamID {
		c.retired = true // its last stream: the next call opens a new connection
	}
	// The stream starts afresh (the reader let go of it when its last
	// call's stream ended: endLocked).
	s.body, s.httpStatus, s.grpcStatus, s.grpcMsg, s.typeOK, s.coded, s.ended, s.headed, s.err, s.unacked = s.body[:0], 0, -1, "", false, false, false, false, nil, 0
	s.sendWin, s.recvAvail, s.unary, s.accept, s.pull = c.peerWin, recvWindow, m.unary, m.accept, m.pull
	c.streams[s.id] = s
	n := c.grantLocked(s, len(msg))
	maxFrame := c.maxFrame
	table, tableNew := c.table, c.tableNew
	c.tableNew = false
	c.mu.Unlock()
	if tableNew {
		c.henc.SetMaxDynamicTableSizeLimit(table)
		c.epoch++ // every block kept is encoded again, the first one with the table's new size
	}
	w := appendHeaders(c.pend, s.id, c.headerBlock(m, c.timeout(m, s)), maxFrame, m.noBody) // a GET: its HEADERS end the stream, as net/http's client sends it
	if !m.noBody && (len(msg) > 0 || end) {
		w = appendData(w, s.id, msg[:n], maxFrame, end && n == len(msg))
	}
	c.pend = w
	flusher := c.queue()
	c.wmu.Unlock()
	var err error
	if direct {
		err = c.flushLocked(false)
		c.xmu.Unlock()
	} else {
		err = c.handOff(flusher, lazy)
	}
	s.inWrite.Store(false)
	if err != nil {
		return c.closeErr(err)
	}
	if n < len(msg) {
		return c.sendRest(ctx, s, msg[n:], end)
	}
	return nil
}

// reserve waits for a stream slot under the peer's
// SETTINGS_MAX_CONCURRENT_STREAMS (as grpc-go's client queues its calls)
// and takes it; the wait ends with ctx or s's deadline (expire).
func (c *h2conn) reserve(ctx context.Context, s *stream) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active >= c.maxStreams {
		stop := context.AfterFunc(ctx, func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
		defer stop()
		for c.active >= c.maxStreams && c.err == nil && !c.goaway && !s.late {
			if err := ctx.Err(); err != nil {
				return err
			}
			c.cond.Wait()
		}
	}
	if s.late {
		return errDeadline
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

// sendRest writes the rest of a request message as the peer grants window,
// its last frame ending the stream when end is set.
func (c *h2conn) sendRest(ctx context.Context, s *stream, rest []byte, end bool) error {
	stop := context.AfterFunc(ctx, func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
	defer stop()
	for len(rest) > 0 {
		c.mu.Lock()
		n := 0
		for c.err == nil && !s.ended && !s.late && ctx.Err() == nil {
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
		s.inWrite.Store(true)
		c.xmu.Lock()
		c.wmu.Lock()
		c.pend = appendData(c.pend, s.id, rest[:n], maxFrame, end && n == len(rest))
		c.queue()
		c.wmu.Unlock()
		err := c.flushLocked(false)
		c.xmu.Unlock()
		s.inWrite.Store(false)
		if err != nil {
			return c.closeErr(err)
		}
		rest = rest[n:]
	}
	return nil
}

// cancel resets a stream whose call ended before its answer did. It never
// waits for wmu: the reset is owed, for the writer to write.
func (c *h2conn) cancel(s *stream) {
	c.mu.Lock()
	open := c.streams[s.id] == s
	if open {
		c.endLocked(s.id, s, context.Canceled)
		open = c.err == nil && c.queueLocked(control{kind: 'r', id: s.id, n: uint32(http2.ErrCodeCancel)})
	}
	c.mu.Unlock()
	if open {
		c.signal()
	}
}

// appendFrame appends one frame.
func appendFrame(w []byte, t http2.FrameType, flags http2.Flags, id uint32, p []byte) []byte {
	n := len(p)
	w = append(w, byte(n>>16), byte(n>>8), byte(n), byte(t), byte(flags))
	w = binary.BigEndian.AppendUint32(w, id&(1<<31-1))
	return append(w, p...)
}

// appendHeaders appends header block hb of stream id as a HEADERS frame
// and as many CONTINUATION frames as the peer's maxFrame needs (RFC 9113
// 6.10), the HEADERS ending the stream when end is set.
func appendHeaders(w []byte, id uint32, hb []byte, maxFrame int, end bool) []byte {
	var flags http2.Flags
	if end {
		flags = http2.FlagHeadersEndStream
	}
	t := http2.FrameHeaders
	for {
		n := min(len(hb), maxFrame)
		if n == len(hb) {
			return appendFrame(w, t, flags|http2.FlagHeadersEndHeaders, id, hb)
		}
		w = appendFrame(w, t, flags, id, hb[:n])
		hb, t, flags = hb[n:], http2.FrameContinuation, 0
	}
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
