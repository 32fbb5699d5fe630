package server

// A bound on the response bytes one gRPC connection may have queued in the
// server and not yet written to its socket.
//
// grpc-go queues a whole response message in its writer (loopy) and lets
// the handler return (unary) or go on (streaming, up to 64 KiB a stream)
// whether or not the client's flow-control window can take it. A client
// that announces SETTINGS_INITIAL_WINDOW_SIZE 0 and never sends
// WINDOW_UPDATE therefore makes the server keep every answer it asks for:
// measured here (TestH2WindowExhaustion), one connection asking GetLargePayloadAsList for 100000
// records (10 MB each) on 20 streams grew the heap by 224 MiB, and the
// streaming GetLargePayload on 680 streams by 129 MiB (it would go on to
// MaxConcurrentStreams, 1000, per connection). Nothing in grpc-go's options
// bounds it: MaxConcurrentStreams counts streams, not bytes, and setting
// InitialWindowSize would only change our own receive window.
//
// So the large RPCs ask the connection's sendBudget before they build a
// message: a message may start while the connection has less than its
// limit (laneLimits) queued (so one message may exceed it), otherwise the
// handler waits, holding no buffer, until the socket takes bytes or the
// call ends. That is HTTP/2 flow control as the client asked for it, done
// before the memory is spent instead of after. A client that reads at any
// speed only waits when it reads slower than the server marshals.
//
// The count can be too high in one way: answers the client reset before
// they were written were charged, are dropped unsent by grpc-go, and are
// never seen written. So a call that has waited a second may forgive its
// lane's count (set it to zero), once until the socket has taken a lane's
// limit again (maybeForgive). A call that has waited Config.WriteTimeout
// (60 s by default, what an HTTP/1.1 response may take) closes its
// connection: the client is not reading, and closing frees everything
// queued for it. A client that never reads thus holds at most about two
// lanes' worth plus one message per lane.
//
// The budget needs to see the bytes the connection writes: the gRPC server
// gets its connections through budgetCreds, insecure transport credentials
// (no security, like insecure.NewCredentials) whose handshake wraps the
// connection to count what is written, and hands the budget to the
// handlers as the peer's AuthInfo.

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Each connection has two lanes, each with its own limit: whole-list
// answers (a few large messages: the bytes queued are about the memory
// held) and the per-record stream (many 100-byte messages, each costing
// grpc-go about 600 bytes of memory while queued, measured). Every byte the
// socket takes is taken from both lanes, so each lane's count is at most
// what that lane has queued.
type lane int

const (
	laneList lane = iota
	laneStream
	lanes
)

// laneLimits are the send budget of one gRPC connection, per lane. With the
// largest list answer (100000 records, about 10 MB) admitted last, and one
// forgiveness (maybeForgive), a connection that never reads holds at most
// about 2 x 18 MB of unsent list answers and 2 x 1 MiB (some 12 MiB of
// memory) of unsent stream messages. A client that reads its answers as
// they come never reaches them.
var laneLimits = [lanes]int64{laneList: 8 << 20, laneStream: 1 << 20}

const (
	// estRecordBytes is what one record is charged before its answer is
	// built, a little under its protobuf size (99,828 B for the 1000
	// records, about 100 B each). Once grpc-go has queued the message, the
	// charge is corrected to its wire length (charge.go): compressed, an
	// answer can be far smaller than its estimate.
	estRecordBytes = 96
)

// sendBudget counts, per lane, the bytes one connection's large answers
// were admitted with, less the bytes its socket took, never below zero (the
// socket also writes headers, framing and small answers that were never
// charged: the clamp absorbs them).
type sendBudget struct {
	stall   time.Duration // a wait this long closes the connection
	close   func() error  // closes the connection
	log     *slog.Logger
	lanes   [lanes]budgetLane
	waiters atomic.Int32
	written atomic.Int64 // bytes the socket took, in all
	mu      sync.Mutex
	changed chan struct{} // closed (and replaced) when bytes are written while someone waits
}

type budgetLane struct {
	limit  int64
	queued atomic.Int64
	// forgivenAt is the connection's written total when this lane's count
	// was last forgiven (see acquire), or -1.
	forgivenAt atomic.Int64
}

func newSendBudget(limits [lanes]int64, stall time.Duration, close func() error, log *slog.Logger) *sendBudget {
	b := &sendBudget{stall: stall, close: close, log: log, changed: make(chan struct{})}
	for i := range b.lanes {
		b.lanes[i].limit = limits[i]
		b.lanes[i].forgivenAt.Store(-1)
	}
	return b
}

// take subtracts n, not below zero.
func (l *budgetLane) take(n int64) {
	for {
		old := l.queued.Load()
		if l.queued.CompareAndSwap(old, max(old-n, 0)) {
			return
		}
	}
}

// admit charges n bytes if what is queued is under the limit; otherwise it
// charges nothing and reports false.
func (l *budgetLane) admit(n int64) bool {
	if l.queued.Add(n)-n < l.limit {
		return true
	}
	l.take(n)
	return false
}

// wrote records that the socket took n bytes and wakes waiters.
func (b *sendBudget) wrote(n int) {
	b.written.Add(int64(n))
	for i := range b.lanes {
		b.lanes[i].take(int64(n))
	}
	b.wake()
}

// wake wakes the calls waiting for budget, if any, to try again.
func (b *sendBudget) wake() {
	if b.waiters.Load() > 0 {
		b.mu.Lock()
		close(b.changed)
		b.changed = make(chan struct{})
		b.mu.Unlock()
	}
}

// streamRefund is what a streaming call that ends early (the client reset
// it, or its connection is closing) gives back to its lane: at most what
// grpc-go queues for one stream before it blocks Send (its 64 KiB write
// quota), which grpc-go drops, unsent, with the stream. Had some of it
// been written after all, the count is only lower than it should be.
const streamRefund = 64 << 10

// charge adds n bytes to lane l without waiting: the part of a message's
// wire length its estimate did not cover (charge.go). Nil-safe.
func (b *sendBudget) charge(l lane, n int64) {
	if b == nil {
		return
	}
	b.lanes[l].queued.Add(n)
}

// refund gives n bytes back to lane l and wakes waiters. Nil-safe.
func (b *sendBudget) refund(l lane, n int64) {
	if b == nil {
		return
	}
	b.lanes[l].take(n)
	b.wake()
}

// errStalled ends a call whose connection did not take its queued answers.
var errStalled = status.Error(codes.Unavailable, "connection closed: the client did not read its answers")

// acquire charges n bytes to lane l, waiting while the lane has its limit
// or more queued, until ctx is done or the wait has lasted b.stall, when it
// closes the connection. A nil budget admits everything.
func (b *sendBudget) acquire(ctx context.Context, l lane, n int64) error {
	if b == nil {
		return nil
	}
	ln := &b.lanes[l]
	if ln.admit(n) {
		return nil
	}
	b.waiters.Add(1)
	defer b.waiters.Add(-1)
	stall := time.NewTimer(b.stall)
	defer stall.Stop()
	forgive := time.NewTimer(forgiveAfter)
	defer forgive.Stop()
	for {
		// Take the channel before trying again: a write after the try
		// closes this channel, so no wake-up is lost.
		b.mu.Lock()
		ch := b.changed
		b.mu.Unlock()
		if ln.admit(n) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-forgive.C:
			b.maybeForgive(ln)
		case <-stall.C:
			b.log.Debug("closing a gRPC connection that does not read its answers",
				"queued", ln.queued.Load(), "waited", b.stall)
			_ = b.close()
			return errStalled
		}
	}
}

// forgiveAfter is how long a call waits before its lane's count may be
// forgiven.
const forgiveAfter = time.Second

// maybeForgive sets the lane's count to zero, unless it was forgiven before
// and the socket has not taken a lane's limit since. The count can be too
// high: an answer the client reset before it was written was charged, and
// grpc-go dropped it unsent (a unary answer gives no sign of that to its
// handler). Forgiving lets such a client go on after a second's wait; a
// client that does not read gets one lane's worth more queued, then waits
// until the stall closes its connection.
func (b *sendBudget) maybeForgive(ln *budgetLane) {
	w := b.written.Load()
	at := ln.forgivenAt.Load()
	if at >= 0 && w-at < ln.limit {
		return
	}
	if ln.forgivenAt.CompareAndSwap(at, w) {
		ln.queued.Store(0)
		b.wake()
	}
}

// sendBudgetFrom returns the budget of the connection a call came on, or
// nil (a connection not accepted through budgetCreds).
func sendBudgetFrom(ctx context.Context) *sendBudget {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	if ai, ok := p.AuthInfo.(budgetAuthInfo); ok {
		return ai.budget
	}
	return nil
}

// budgetConn counts what the socket takes.
type budgetConn struct {
	net.Conn
	budget *sendBudget
}

func (c *budgetConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.budget.wrote(n)
	}
	return n, err
}

// budgetAuthInfo is the AuthInfo of a connection from budgetCreds: no
// security, and the connection's send budget.
type budgetAuthInfo struct {
	credentials.CommonAuthInfo
	budget *sendBudget
}

func (budgetAuthInfo) AuthType() string { return "insecure" }

// budgetCreds are server-side insecure transport credentials that give each
// connection a send budget of limits bytes, closed after a wait of stall.
type budgetCreds struct {
	limits [lanes]int64
	stall  time.Duration
	log    *slog.Logger
}

func (c budgetCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	b := newSendBudget(c.limits, c.stall, conn.Close, c.log)
	return &budgetConn{Conn: conn, budget: b},
		budgetAuthInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}, budget: b},
		nil
}

func (budgetCreds) ClientHandshake(_ context.Context, _ string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return conn, budgetAuthInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}, nil
}

func (budgetCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "insecure"}
}

func (c budgetCreds) Clone() credentials.TransportCredentials { return c }

func (budgetCreds) OverrideServerName(string) error { return nil }
