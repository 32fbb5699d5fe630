package lean

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// grpcClient is the lean gRPC client: Connections HTTP/2 connections
// (default 1), each carrying the streams of every caller that picks it,
// round-robin; a connection that failed, is going away or has used its
// stream IDs is replaced by a new one at the next call that picks it
// (dialled outside the client's lock: one dial per slot at a time, the
// other callers of that slot wait for it), and the old one closes when its
// last stream ends.
type grpcClient struct {
	o    call.Options
	born time.Time
	next atomic.Uint64
	dog  *watchdog

	mu       sync.Mutex
	slots    []slot
	replaced []*h2conn // draining, closed by Close if still open
	closed   bool
}

// slot is one of the client's connections.
type slot struct {
	h       *h2conn
	dialing chan struct{} // closed when the dial in progress ends; nil: none
}

var errClientClosed = errors.New("client closed")

func newGRPC(o call.Options) *grpcClient {
	n := o.Connections
	if n == 0 {
		n = 1
	}
	return &grpcClient{o: o, born: time.Now(), dog: newWatchdog(), slots: make([]slot, n)}
}

// conn is the next connection, dialled (by deadline) when it is not usable.
func (c *grpcClient) conn(ctx context.Context, deadline time.Time) (*h2conn, error) {
	i := 0
	if len(c.slots) > 1 {
		i = int(c.next.Add(1) % uint64(len(c.slots)))
	}
	c.mu.Lock()
	sl := &c.slots[i]
	for {
		if c.closed {
			c.mu.Unlock()
			return nil, errClientClosed
		}
		if h := sl.h; h != nil && h.usable() {
			c.mu.Unlock()
			return h, nil
		}
		if sl.dialing == nil {
			break
		}
		ch := sl.dialing
		c.mu.Unlock()
		select { // another caller's dial, bounded by its deadline
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		c.mu.Lock()
	}
	ch := make(chan struct{})
	sl.dialing = ch
	c.mu.Unlock()

	dctx, cancel := context.WithDeadline(ctx, deadline) // a dial is rare: a context of its own
	h, err := dialH2(dctx, c.o.Dialer.DialContext, c.o.Target)
	cancel()

	c.mu.Lock()
	sl.dialing = nil
	close(ch)
	old := sl.h
	if err == nil && !c.closed {
		sl.h = h
		if old != nil {
			c.replaced = slices.DeleteFunc(c.replaced, func(r *h2conn) bool { return r.dead() })
			c.replaced = append(c.replaced, old)
		}
	}
	closed := c.closed
	c.mu.Unlock()
	switch {
	case err != nil:
		return nil, err
	case closed:
		h.close(errClientClosed)
		return nil, errClientClosed
	}
	if old != nil {
		old.drain() // its streams go on to their answers; then it closes
	}
	return h, nil
}

// Close implements call.Client.
func (c *grpcClient) Close() error {
	c.dog.close()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, sl := range c.slots {
		if sl.h != nil {
			sl.h.close(errClientClosed)
		}
	}
	for _, h := range c.replaced {
		h.close(errClientClosed)
	}
	return nil
}

// method is one scenario's request, built once: its header fields (as
// grpc-go's client sends them, but grpc-timeout: the deadline is the
// client's to keep) and its length-prefixed message.
type method struct {
	fields []hpack.HeaderField
	msg    []byte
	unary  bool   // the answer is one length-prefixed message (gRPC, gRPC-Web)
	accept string // the media type the answer must have; "": gRPC's (application/grpc*)
	noBody bool   // no request body: the HEADERS end the stream (a GET)
	pull   bool   // a stream scenario's: its caller takes the answer's messages one by one (grpcstream.go)
	// timed: each call's request carries the time left to its deadline
	// as grpc-timeout, as grpc-go's client sends it when the call has a
	// deadline (the standard engine's always has). The server arms a timer
	// for it, and a new value is a literal added to the dynamic table: a
	// request without it is fewer bytes and less work than grpc-go's.
	timed bool
}

// Caller implements call.Client.
func (c *grpcClient) Caller(scenario api.Scenario) (call.Caller, error) {
	if scenario.IsStream() {
		return c.streamCaller(scenario)
	}
	path := grpcPath(scenario, c.o.Payload != nil)
	if path == "" {
		return nil, fmt.Errorf("lean: unknown scenario %q", scenario)
	}
	m := &method{unary: scenario != api.Stream, fields: c.fields(path), timed: true}
	if c.o.Records != 0 && (scenario == api.Large || scenario == api.Stream) {
		m.fields = append(m.fields, hpack.HeaderField{Name: api.MetadataRecords, Value: strconv.Itoa(c.o.Records)})
	}
	body, check, err := grpcRequest(scenario, c.o)
	if err != nil {
		return nil, fmt.Errorf("lean: %w", err)
	}
	m.msg = binary.BigEndian.AppendUint32([]byte{0}, uint32(len(body)))
	m.msg = append(m.msg, body...)
	a := c.newCaller(m)
	a.ans = func(s *stream) ([]byte, error) { return s.body, a.answer(s) }
	return checked(a, check, c.born), nil
}

// fields are the header fields of a call of path, as grpc-go's client
// sends them.
func (c *grpcClient) fields(path string) []hpack.HeaderField {
	f := []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: scheme(c.o)},
		{Name: ":path", Value: path}, {Name: ":authority", Value: c.o.Target},
		{Name: "content-type", Value: "application/grpc"},
		{Name: "user-agent", Value: "grpc-go/" + grpc.Version},
		{Name: "te", Value: "trailers"},
	}
	if c.o.Token != "" {
		f = append(f, hpack.HeaderField{Name: "authorization", Value: "Bearer " + c.o.Token})
	}
	return f
}

// grpcTimeout is d as a grpc-timeout value (gRPC over HTTP/2: at most
// eight digits and a unit), rounded up in the finest unit that fits, as
// grpc-go's client writes it.
func grpcTimeout(d time.Duration) string {
	if d <= 0 {
		return "0n"
	}
	for _, u := range [...]struct {
		d    time.Duration
		unit string
	}{{time.Nanosecond, "n"}, {time.Microsecond, "u"}, {time.Millisecond, "m"}, {time.Second, "S"}, {time.Minute, "M"}, {time.Hour, "H"}} {
		v := d / u.d
		if d%u.d != 0 {
			v++ // up (never an earlier deadline), without overflowing d
		}
		if v <= 99999999 {
			return strconv.FormatInt(int64(v), 10) + u.unit
		}
	}
	return "99999999H"
}

// scheme is the :scheme of the requests o's dialer carries: https over
// TLS (RFC 9113 8.3.1).
func scheme(o call.Options) string {
	if o.Dialer.TLS != nil {
		return "https"
	}
	return "http"
}

// newCaller is the exchanger of method m's calls; its ans is the
// caller's to set.
func (c *grpcClient) newCaller(m *method) *grpcCaller {
	a := &grpcCaller{c: c, m: m}
	a.watch(c.dog)
	return a
}

// watched is the state of an HTTP/2 call that the watchdog sees, shared
// by a unary call (grpcCaller) and a stream's (grpcStream): its stream,
// the call in flight (f: past its deadline the watchdog leaves a token in
// expired) and the connection it is sending on (sending, nil when it is
// not: the watchdog ends the wait to send there, h2conn.expire).
type watched struct {
	s       stream
	f       *inflight
	expired chan struct{}
	sending atomic.Pointer[h2conn]
}

// watch readies w and puts it under dog's watch.
func (w *watched) watch(dog *watchdog) {
	w.expired = make(chan struct{}, 1)
	w.s.done = make(chan struct{}, 1)
	w.f = dog.watch(func() {
		select {
		case w.expired <- struct{}{}:
		default:
		}
		if h := w.sending.Load(); h != nil {
			h.expire(&w.s)
		}
	})
}

// grpcCaller makes one scenario's calls, one stream at a time (the
// exchanger of a caller).
type grpcCaller struct {
	c *grpcClient
	m *method
	watched
	// ans checks a whole answer's status, media type and framing, and
	// returns the bytes the verifier checks (gRPC: the DATA, answer; the
	// other protocols over HTTP/2: web.go).
	ans func(s *stream) ([]byte, error)
}

// exchange implements exchanger. The deadline ends the wait for the
// answer; waits to send (for a stream slot, for send window) end with ctx,
// and a call that was kept in them past its deadline is a timeout all the
// same.
func (a *grpcCaller) exchange(ctx context.Context, _, deadline time.Time) ([]byte, time.Time, error) {
	var err error
	s := &a.s
	// Its grpc-timeout is the time left to the earlier of its own deadline
	// and ctx's (a cell's hard end), as grpc-go takes ctx's.
	s.deadline = deadline
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		s.deadline = d
	}
	var h *h2conn
	for attempt := 0; ; attempt++ {
		nh, cerr := a.c.conn(ctx, deadline)
		if cerr != nil {
			err = cerr
			break
		}
		h = nh
		select { // a token left by a cancelled call
		case <-s.done:
		default:
		}
		s.late = false // the rest of s starts afresh when it is sent (h2conn.send)
		if attempt == 0 {
			a.f.begin(ctx, deadline)
		}
		a.sending.Store(h)
		err = h.send(ctx, s, a.m)
		a.sending.Store(nil)
		if err == nil {
			select {
			case <-s.done:
				if s.err != nil && isRefused(s.err) {
					err = s.err
				}
			case <-ctx.Done():
				h.cancel(s)
				err = ctx.Err()
			case <-a.expired:
				h.cancel(s)
				err = errDeadline
			}
		}
		// A stream the server never processed is made again once, on
		// another connection, as grpc-go retries it.
		if err == nil || !isRefused(err) || attempt > 0 || ctx.Err() != nil {
			break
		}
	}
	if h == nil { // no connection: the call never began
		return nil, time.Time{}, err
	}
	now := time.Now()
	if aborted, late := a.f.end(now); aborted || late {
		select { // the watchdog's token, if the answer came first
		case <-a.expired:
		default:
		}
		if late && ctx.Err() == nil {
			h.cancel(s) // still open when the send itself was what ran late
			err = errDeadline
		}
	}
	var body []byte
	if err == nil {
		body, err = a.ans(s)
	}
	return body, now, err
}

// answer checks what every answer must be: a 200 of content type
// application/grpc with grpc-status 0, and messages that are uncompressed
// and fill the DATA exactly (one for a unary call).
func (a *grpcCaller) answer(s *stream) error { return grpcAnswer(s, a.m.unary) }

// grpcAnswer is answer's check of s (which has ended), unary or not.
func grpcAnswer(s *stream, unary bool) error {
	switch {
	case s.err != nil && !(errors.Is(s.err, errNoTrailers) && s.httpStatus != 0):
		return s.err
	case s.httpStatus != 200:
		return call.Invalid("HTTP status %d", s.httpStatus)
	case s.grpcStatus > 0:
		code := codes.Code(s.grpcStatus)
		return call.GRPCStatus(code, fmt.Errorf("rpc error: code = %v desc = %s", code, s.grpcMsg))
	case s.grpcStatus != 0:
		return call.Invalid("no grpc-status")
	case !s.typeOK:
		return call.Invalid("content type is not application/grpc")
	}
	n, err := frames(s.body, nil)
	if err == nil && unary && n != 1 {
		err = call.Invalid("%d messages, want 1", n)
	}
	return err
}

// frames walks the length-prefixed messages of b, handing each to each
// (when not nil), and counts them.
func frames(b []byte, each func([]byte) error) (int, error) {
	n := 0
	for len(b) > 0 {
		if len(b) < 5 {
			return n, call.Invalid("message %d: %d bytes of a 5-byte prefix", n, len(b))
		}
		if b[0] != 0 {
			return n, call.Invalid("message %d compressed", n)
		}
		size := int(binary.BigEndian.Uint32(b[1:5]))
		if size > len(b)-5 {
			return n, call.Invalid("message %d: %d bytes, %d received", n, size, len(b)-5)
		}
		if each != nil {
			if err := each(b[5 : 5+size]); err != nil {
				return n, err
			}
		}
		b = b[5+size:]
		n++
	}
	return n, nil
}
