package lean

import (
	"context"
	"sync"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/restcall"
)

// restClient is the lean REST or REST+protobuf client: one connection per
// caller, dialled on its first call and again after a failure.
type restClient struct {
	protocol api.Protocol
	o        call.Options
	born     time.Time

	dog *watchdog

	mu    sync.Mutex
	conns map[*h1conn]struct{} // open, closed by Close
}

func newREST(protocol api.Protocol, o call.Options) *restClient {
	return &restClient{protocol: protocol, o: o, born: time.Now(), dog: newWatchdog(), conns: map[*h1conn]struct{}{}}
}

// Caller implements call.Client.
func (c *restClient) Caller(scenario api.Scenario) (call.Caller, error) {
	if scenario.IsStream() {
		return c.streamCaller(scenario) // streams.go
	}
	ex, err := restcall.NewExchange(c.o, c.protocol, scenario)
	if err != nil {
		return nil, err
	}
	return checked(c.newCaller(ex.Request, ex.Accept, restReply(ex.Accept)), ex.Check, c.born), nil
}

// newCaller is the exchanger that writes req and checks its answers with
// reply (status, media type accept, framing).
func (c *restClient) newCaller(req []byte, accept string, reply func(reply) ([]byte, error)) *restCaller {
	a := &restCaller{c: c, req: req, accept: accept, reply: reply}
	a.f = c.dog.watch(func() { a.conn.abort() }) // only while a call is in flight: a.conn is set
	return a
}

// Close implements call.Client.
func (c *restClient) Close() error {
	c.dog.close()
	c.mu.Lock()
	defer c.mu.Unlock()
	for h := range c.conns {
		h.c.Close()
	}
	clear(c.conns)
	return nil
}

func (c *restClient) dial(ctx context.Context) (*h1conn, error) {
	nc, err := c.o.Dialer.DialContext(ctx, "tcp", c.o.Target)
	if err != nil {
		return nil, err
	}
	h := newH1Conn(nc)
	c.mu.Lock()
	c.conns[h] = struct{}{}
	c.mu.Unlock()
	return h, nil
}

func (c *restClient) drop(h *h1conn) {
	h.c.Close()
	c.mu.Lock()
	delete(c.conns, h)
	c.mu.Unlock()
}

// restCaller makes one scenario's calls over its own connection: REST's,
// and the web protocols' over HTTP/1.1 (web.go).
type restCaller struct {
	c      *restClient
	req    []byte // the request as written on the wire
	accept string // the media type of the answer
	// reply checks an answer's status, media type and framing, and
	// returns the bytes the verifier checks.
	reply func(reply) ([]byte, error)
	conn  *h1conn
	body  []byte
	f     *inflight // the call in flight, as the watchdog and ctx see it
	ctx   ctxWatch
}

// exchange implements exchanger.
func (a *restCaller) exchange(ctx context.Context, start, deadline time.Time) ([]byte, time.Time, error) {
	if a.conn == nil {
		dctx, cancel := context.WithDeadline(ctx, deadline) // a dial is rare: a context of its own
		h, err := a.c.dial(dctx)
		cancel()
		if err != nil {
			return nil, time.Time{}, err
		}
		a.conn = h
	}
	a.ctx.follow(ctx, a.f)
	a.f.begin(ctx, deadline)
	if err := ctx.Err(); err != nil { // it ended before begin: its watch found nothing in flight
		a.f.end(start)
		return nil, time.Time{}, err
	}
	hd, body, err := a.conn.exchange(a.req, a.accept, a.body)
	now := time.Now()
	aborted, late := a.f.end(now)
	a.body = body
	if err != nil || hd.close || aborted {
		a.c.drop(a.conn)
		a.conn = nil
	}
	if late {
		err = errDeadline
	}
	if err == nil {
		body, err = a.reply(replyOf(hd, body))
	}
	return body, now, err
}
