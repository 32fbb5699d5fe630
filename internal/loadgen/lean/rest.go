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

	mu    sync.Mutex
	conns map[*h1conn]struct{} // open, closed by Close
}

func newREST(protocol api.Protocol, o call.Options) *restClient {
	return &restClient{protocol: protocol, o: o, born: time.Now(), conns: map[*h1conn]struct{}{}}
}

// Caller implements call.Client.
func (c *restClient) Caller(scenario api.Scenario) (call.Caller, error) {
	ex, err := restcall.NewExchange(c.o, c.protocol, scenario)
	if err != nil {
		return nil, err
	}
	return &restCaller{c: c, ex: ex, v: verifier{check: ex.Check, born: c.born}}, nil
}

// Close implements call.Client.
func (c *restClient) Close() error {
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

// restCaller makes one scenario's calls over its own connection.
type restCaller struct {
	c    *restClient
	ex   *restcall.Exchange
	conn *h1conn
	body []byte
	v    verifier
}

// Call implements call.Caller.
func (a *restCaller) Call(ctx context.Context) (call.Outcome, error) {
	timer := call.StartTimer()
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return call.Outcome{}, err
	}
	if a.conn == nil {
		h, err := a.c.dial(ctx)
		if err != nil {
			return call.Outcome{}, err
		}
		a.conn = h
	}
	body, keep, err := a.conn.roundTrip(ctx, a.ex.Request, a.ex.Accept, a.body)
	a.body = body
	if !keep {
		a.c.drop(a.conn)
		a.conn = nil
	}
	if err != nil {
		return call.Outcome{}, err
	}
	timer.Received()
	t0 := time.Now()
	err = a.v.verify(body, start)
	timer.Decoded(t0)
	return timer.Outcome(), err
}
