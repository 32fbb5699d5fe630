// Package wire counts what crosses the socket: connections dialled and bytes
// written and read, including all protocol framing. Both the REST and the
// gRPC clients dial through a Dialer, so both protocols are counted by the
// same code at the same place.
package wire

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
)

// Stats are the totals of a Dialer's connections.
type Stats struct {
	Dials    int64 // connections opened successfully
	Sent     int64 // bytes written to the sockets
	Received int64 // bytes read from the sockets
}

// Sub returns s - o, the traffic between two snapshots.
func (s Stats) Sub(o Stats) Stats {
	return Stats{Dials: s.Dials - o.Dials, Sent: s.Sent - o.Sent, Received: s.Received - o.Received}
}

// Dialer opens TCP connections and counts their traffic. The zero value is
// ready to use. Its memory does not grow with the number of connections
// opened over time: a closed connection's counts fold into the totals.
type Dialer struct {
	// Dialer is the underlying dialer; its zero value is net.Dialer's.
	Dialer net.Dialer
	// Dial, when set, opens the connections instead of Dialer (e.g. through
	// an emulated link: link.Relay.DialContext). What it returns is counted
	// as it is, so the counts stay the application's bytes.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// UDP, when set, opens the UDP sockets of ListenUDP instead of the
	// host's, and resolves the address to send to (an emulated link:
	// link.Packet.DialUDP).
	UDP func(ctx context.Context, addr string) (net.PacketConn, *net.UDPAddr, error)
	// TLS, when set, makes every connection TLS: the handshake is done in
	// DialContext, timed (Handshakes) and counted (tls.go). It sets the
	// ALPN protocols offered.
	TLS *tls.Config

	mu     sync.Mutex
	live   map[*counts]struct{}
	closed Stats // totals of connections already closed, and all dials
	hs     handshakes
}

// DialContext dials like net.Dialer.DialContext and wraps the connection so
// its bytes are counted. It fits http.Transport.DialContext.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	dial := d.Dialer.DialContext
	if d.Dial != nil {
		dial = d.Dial
	}
	c, err := dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cc := &Conn{Conn: c}
	d.track(&cc.counts)
	if d.TLS != nil {
		return d.tlsHandshake(ctx, cc, addr)
	}
	return cc, nil
}

// DialTCP dials addr over TCP; it fits grpc.WithContextDialer.
func (d *Dialer) DialTCP(ctx context.Context, addr string) (net.Conn, error) {
	return d.DialContext(ctx, "tcp", addr)
}

// Stats returns the totals so far, of open and closed connections.
func (d *Dialer) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.closed
	for c := range d.live {
		s.Sent += c.sent.Load()
		s.Received += c.received.Load()
	}
	return s
}

// track counts a new connection (or UDP socket) in the dialer's totals.
func (d *Dialer) track(c *counts) {
	c.d = d
	d.mu.Lock()
	if d.live == nil {
		d.live = make(map[*counts]struct{})
	}
	d.live[c] = struct{}{}
	d.closed.Dials++
	d.mu.Unlock()
}

// counts are one connection's bytes, folded into its dialer's totals at
// its close.
type counts struct {
	d         *Dialer
	sent      atomic.Int64
	received  atomic.Int64
	folded    atomic.Bool // counts moved to the dialer's totals by fold
	closeOnce sync.Once
}

// Conn is a counted connection.
type Conn struct {
	net.Conn
	counts
}

// Read reads from the connection and counts the bytes read.
func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.count(&c.received, n)
	return n, err
}

// Write writes to the connection and counts the bytes written.
func (c *Conn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.count(&c.sent, n)
	return n, err
}

// Sent counts n bytes written to the socket under c by other means than
// Write (a client that makes the system call itself: lean's HTTP/1.1).
func (c *Conn) Sent(n int) { c.count(&c.sent, n) }

// Received counts n bytes read from the socket under c by other means than
// Read.
func (c *Conn) Received(n int) { c.count(&c.received, n) }

// count adds n bytes to a counter. Once Close has folded the connection
// into the dialer's totals, a Read or Write that was still returning folds
// its own bytes in too, so none are lost. Swap hands each byte to exactly
// one of the two folds.
func (c *counts) count(v *atomic.Int64, n int) {
	if n == 0 {
		return
	}
	v.Add(int64(n))
	if c.folded.Load() {
		if late := v.Swap(0); late != 0 {
			c.d.mu.Lock()
			if v == &c.sent {
				c.d.closed.Sent += late
			} else {
				c.d.closed.Received += late
			}
			c.d.mu.Unlock()
		}
	}
}

// Close closes the connection and folds its counts into the dialer's totals.
func (c *Conn) Close() error {
	err := c.Conn.Close()
	c.fold()
	return err
}

// fold moves the counts into the dialer's totals, once.
func (c *counts) fold() {
	c.closeOnce.Do(func() {
		c.d.mu.Lock()
		delete(c.d.live, c)
		c.folded.Store(true) // before the swaps: see count
		c.d.closed.Sent += c.sent.Swap(0)
		c.d.closed.Received += c.received.Swap(0)
		c.d.mu.Unlock()
	})
}
