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

import (
	"context"
	"errors"
	"net"
	"time"

	"golang.org/x/sync/semaphore"
)

// connAnswers bounds the charges of one connection's answers in flight.
type connAnswers struct {
	sem   *semaphore.Weighted
	limit int64
	stall time.Duration
	conn  net.Conn
}

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
	return context.WithValue(ctx, connAnswersKey{}, &connAnswers{
		sem: semaphore.NewWeighted(limit), limit: limit, stall: s.cfg.WriteTimeout, conn: c})
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
	return func() { a.sem.Release(n) }, nil
}
