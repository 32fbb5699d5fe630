package server

// A bound on the large answers one HTTP/2 REST connection has in flight.
//
// Over HTTP/1.1 a connection carries one request at a time, so the
// connection gate (conngate.go) times what one answer holds bounds REST's
// memory. Over HTTP/2 one connection carries up to MaxConcurrentStreams
// requests at once, and a client that announces a flow-control window of 0
// makes every handler hold its answer's buffers until the stream's
// WriteTimeout: measured (TestH2CRESTWindowExhaustion) without this bound,
// 300 GETs of 100000 records on one connection grew the heap by about
// 200 MiB. gRPC's connections have their send budget (limits.go) for the
// same reason; REST's over HTTP/2 get connAnswers: the charges of their
// large answers (restanswer.go) must fit in laneLimits[laneList] per
// connection. A call waits for room while the connection's other answers
// are written; one that waited WriteTimeout closes the connection (its
// client is not reading), as gRPC's send budget does.
//
// Waiting calls cost too: each holds its goroutine and its stream (about
// 25 KiB), up to MaxConcurrentStreams a connection, for up to WriteTimeout.
// gRPC's large calls are admitted by the tap (grpc.go), charged
// callOverhead each and refused at once past their share of the budget;
// REST's, gRPC-Web's and Connect's over HTTP/2 were not, and 24 connections
// of 1000 list calls that never read took the server to 630 MiB of its
// 768 MiB limit (TestMemoryAttackStreams/h2c with h2c=24; gRPC's 236 MiB).
// admitH2Call admits them the same way, sharing gRPC's count. A refused
// call's answer still costs that much while it waits for the window to
// write its error (grpc-go's refusal is a HEADERS frame, which flow control
// does not hold; REST's 503 body, gRPC-Web's trailers and Connect's error
// are DATA): so when the calls' share is spent and the refused call's own
// connection is stalled (calls on it wait for room and none of its answers
// has been written out for stallAfter), the connection is closed, as it
// would be after WriteTimeout anyway. A connection whose answers are being
// read is never closed for the budget: its lane may be full (a client
// asking for more than its lane at once, as a capacity probe does) while
// the budget is spent by others; its call then gets the busy refusal on its
// own stream, and the client's other calls go on.

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// connAnswers bounds the charges of one connection's answers in flight.
type connAnswers struct {
	sem   *semaphore.Weighted
	limit int64
	stall time.Duration
	conn  net.Conn
	// written is when an answer of this connection was last written out
	// (its charge given back), or when the connection came (unix ns).
	written atomic.Int64
}

// stallAfter is how long a connection whose calls wait for room may go
// without an answer written before a budget refusal takes it for stalled:
// as long as a call waits for the budget (a client that reads, on
// loopback or a VPS's link, takes milliseconds to read a list answer).
const stallAfter = budgetWait

type connAnswersKey struct{}

// errConnStalled ends a call whose connection did not read its answers.
var errConnStalled = errors.New("connection closed: the client did not read its answers")

// connContext is the HTTP server's ConnContext: an HTTP/2 connection
// handed over by the router (h2route.go) gets its connAnswers.
func (s *Server) connContext(ctx context.Context, c net.Conn) context.Context {
	if _, ok := c.(*h2Conn); !ok {
		return ctx
	}
	limit := laneLimits[laneList]
	a := &connAnswers{sem: semaphore.NewWeighted(limit), limit: limit, stall: s.cfg.WriteTimeout, conn: c}
	a.written.Store(time.Now().UnixNano())
	return context.WithValue(ctx, connAnswersKey{}, a)
}

// stalled reports whether the connection's client looks like it stopped
// reading: calls wait for room for their answers (TryAcquire fails while
// any waits) and no answer was written out for stallAfter.
func (a *connAnswers) stalled() bool {
	if time.Since(time.Unix(0, a.written.Load())) < stallAfter {
		return false
	}
	if a.sem.TryAcquire(1) { // nobody waits
		a.sem.Release(1)
		return false
	}
	return true
}

// admitH2Call admits a large call that came over HTTP/2 (its connection
// has connAnswers) as the tap admits gRPC's (membudget.go admitCall):
// refused at once, with the budget's error, when the calls admitted hold
// their share; end gives the call's charge back. Other calls (HTTP/1.1,
// one at a time a connection, counted by the connection gate) are not
// counted.
func (s *Server) admitH2Call(ctx context.Context) (end func(), err error) {
	a, _ := ctx.Value(connAnswersKey{}).(*connAnswers)
	if a == nil {
		return func() {}, nil
	}
	if !s.mem.admitCall() {
		if a.stalled() {
			_ = a.conn.Close()
			return nil, errConnStalled
		}
		return nil, s.mem.busy()
	}
	return s.mem.endCall, nil
}

// acquireConn charges n to the connection of the request ctx belongs to,
// if it has connAnswers, and returns what gives it back (a no-op when it
// has none).
func acquireConn(ctx context.Context, n int64) (release func(), err error) {
	a, _ := ctx.Value(connAnswersKey{}).(*connAnswers)
	if a == nil {
		return func() {}, nil
	}
	n = min(n, a.limit)
	if !a.sem.TryAcquire(n) {
		wctx, cancel := context.WithTimeout(ctx, a.stall)
		err := a.sem.Acquire(wctx, n)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			_ = a.conn.Close()
			return nil, errConnStalled
		}
	}
	return func() {
		a.written.Store(time.Now().UnixNano())
		a.sem.Release(n)
	}, nil
}
