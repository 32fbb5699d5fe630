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
	"sync"
	"time"

	"google.golang.org/grpc/codes"
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

// laneWeight is what one byte queued in a lane costs the server-wide
// memory budget (membudget.go): a stream message of about 100 bytes costs
// grpc-go about 600 bytes of memory while queued.
var laneWeight = [lanes]int64{laneList: 1, laneStream: 6}

// sendBudget counts, per lane, the bytes one connection's large answers
// were admitted with, less the bytes its socket took, never below zero (the
// socket also writes headers, framing and small answers that were never
// charged: the clamp absorbs them). Every change of a lane's count is also
// made, weighted (laneWeight), in the server's memBudget, which a charge
// must fit too; what the connection still holds there is given back when it
// closes.
type sendBudget struct {
	stall time.Duration // a wait this long closes the connection
	close func() error  // closes the connection
	log   *slog.Logger
	mem   *memBudget // the server's; nil: none

	mu      sync.Mutex
	lanes   [lanes]budgetLane
	owed    int64 // memBudget bytes of forgiven counts: paid back by writes, or at close
	written int64 // bytes the socket took, in all
	closed  bool
	waiters int
	changed chan struct{} // closed (and replaced) when bytes are written while someone waits
}

type budgetLane struct {
	limit  int64
	queued int64
	// forgivenAt is the connection's written total when this lane's count
	// was last forgiven (see acquire), or -1.
	forgivenAt int64
}

func newSendBudget(limits [lanes]int64, stall time.Duration, close func() error, log *slog.Logger, mem *memBudget) *sendBudget {
	b := &sendBudget{stall: stall, close: close, log: log, mem: mem, changed: make(chan struct{})}
	for i := range b.lanes {
		b.lanes[i].limit = limits[i]
		b.lanes[i].forgivenAt = -1
	}
	return b
}

// take subtracts up to n from lane l, not below zero, and returns the
// memBudget bytes that frees. b.mu is held.
func (b *sendBudget) take(l lane, n int64) int64 {
	ln := &b.lanes[l]
	d := min(ln.queued, n)
	ln.queued -= d
	return d * laneWeight[l]
}

// queued returns lane l's count.
func (b *sendBudget) queued(l lane) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lanes[l].queued
}

// wakeLocked wakes the calls waiting for this connection. b.mu is held.
func (b *sendBudget) wakeLocked() {
	if b.waiters > 0 {
		close(b.changed)
		b.changed = make(chan struct{})
	}
}

// wrote records that the socket took n bytes and wakes waiters.
func (b *sendBudget) wrote(n int) {
	b.mu.Lock()
	b.written += int64(n)
	var freed int64
	for l := range lanes {
		freed += b.take(l, int64(n))
	}
	o := min(b.owed, int64(n))
	b.owed -= o
	freed += o
	if freed > 0 {
		b.wakeLocked()
	}
	b.mu.Unlock()
	b.mem.release(freed)
}

// streamRefund is what a streaming call that ends early (the client reset
// it, or its connection is closing) gives back to its lane: at most what
// grpc-go queues for one stream before it blocks Send (its 64 KiB write
// quota), which grpc-go drops, unsent, with the stream. Had some of it
// been written after all, the count is only lower than it should be.
const streamRefund = 64 << 10

// refund gives n bytes back to lane l and wakes waiters. Nil-safe.
func (b *sendBudget) refund(l lane, n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	freed := b.take(l, n)
	b.wakeLocked()
	b.mu.Unlock()
	b.mem.release(freed)
}

// charge adds n bytes to lane l without waiting: the part of a message's
// wire length its estimate did not cover (charge.go). Nil-safe.
func (b *sendBudget) charge(l lane, n int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed { // everything queued is gone with the connection
		return
	}
	b.lanes[l].queued += n
	b.mem.force(n * laneWeight[l])
}

// closeConn releases everything the connection still holds in the memBudget;
// later charges are not counted. Waiters see errStalled.
func (b *sendBudget) closeConn() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	freed := b.owed
	b.owed = 0
	for l := range lanes {
		freed += b.take(l, b.lanes[l].queued)
	}
	b.waiters++ // so that wakeLocked wakes everyone
	b.wakeLocked()
	b.waiters--
	b.mu.Unlock()
	b.mem.release(freed)
}

// errStalled ends a call whose connection did not take its queued answers.
var errStalled = status.Error(codes.Unavailable, "connection closed: the client did not read its answers")

// tryAdmit charges n bytes to lane l if the lane has less than its limit
// queued and the memBudget has room. laneOK says whether the lane had
// room (so that a refusal is the memBudget's).
func (b *sendBudget) tryAdmit(l lane, n int64) (ok, laneOK bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false, false, errStalled
	}
	ln := &b.lanes[l]
	if ln.queued >= ln.limit {
		return false, false, nil
	}
	if !b.mem.tryAcquire(n * laneWeight[l]) {
		return false, true, nil
	}
	ln.queued += n
	return true, true, nil
}

// acquire charges n bytes to lane l, waiting while the lane has its limit
// or more queued, until ctx is done or the wait has lasted b.stall, when it
// closes the connection. A charge the lane admits but the server's
// memBudget has no room for waits at most budgetWait, then is refused
// (RESOURCE_EXHAUSTED). A nil budget admits everything.
func (b *sendBudget) acquire(ctx context.Context, l lane, n int64) error {
	if b == nil {
		return nil
	}
	if ok, _, err := b.tryAdmit(l, n); ok || err != nil {
		return err
	}
	b.mu.Lock()
	b.waiters++
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.waiters--
		b.mu.Unlock()
	}()
	stall := time.NewTimer(b.stall)
	defer stall.Stop()
	forgive := time.NewTimer(forgiveAfter)
	defer forgive.Stop()
	var memTimeout <-chan time.Time // runs from the first refusal by the memBudget
	for {
		// Take the channels before trying again: a write or a release
		// after the try closes them, so no wake-up is lost.
		b.mu.Lock()
		ch := b.changed
		b.mu.Unlock()
		var memCh <-chan struct{}
		done := func() {}
		if b.mem != nil {
			memCh, done = b.mem.wait()
		}
		ok, laneOK, err := b.tryAdmit(l, n)
		if ok || err != nil {
			done()
			return err
		}
		if laneOK && memTimeout == nil {
			t := time.NewTimer(budgetWait)
			defer t.Stop()
			memTimeout = t.C
		}
		select {
		case <-ch:
		case <-memCh:
		case <-ctx.Done():
			done()
			return status.FromContextError(ctx.Err()).Err()
		case <-memTimeout:
			done()
			return grpcBusy(b.mem.busy())
		case <-forgive.C:
			b.maybeForgive(l)
		case <-stall.C:
			done()
			b.log.Debug("closing a gRPC connection that does not read its answers",
				"lane", l, "waited", b.stall)
			_ = b.close()
			return errStalled
		}
		done()
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
// until the stall closes its connection. What was forgiven stays charged
// in the memBudget (owed) until the socket takes as many bytes or the
// connection closes: forgiving admits on this connection, not memory.
func (b *sendBudget) maybeForgive(l lane) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ln := &b.lanes[l]
	if ln.forgivenAt >= 0 && b.written-ln.forgivenAt < ln.limit {
		return
	}
	ln.forgivenAt = b.written
	b.owed += ln.queued * laneWeight[l]
	ln.queued = 0
	b.wakeLocked()
}
