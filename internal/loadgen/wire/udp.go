package wire

import (
	"context"
	"errors"
	"net"
)

// PacketConn is a counted UDP socket (HTTP/3's QUIC): the bytes are the
// UDP payloads, QUIC's packets with their headers and encryption, and
// each socket counts as one connection (a client opens one per QUIC
// connection).
type PacketConn struct {
	net.PacketConn
	counts
}

// ListenUDP opens a counted UDP socket to send to addr (host:port) and
// returns it with addr resolved: in the load generator's network
// namespace and to the server's address there when UDP is set (an
// emulated link: link.Packet), else on the host.
func (d *Dialer) ListenUDP(ctx context.Context, addr string) (*PacketConn, *net.UDPAddr, error) {
	var pc net.PacketConn
	var raddr *net.UDPAddr
	var err error
	if d.UDP != nil {
		pc, raddr, err = d.UDP(ctx, addr)
	} else {
		raddr, err = net.ResolveUDPAddr("udp", addr)
		if err == nil {
			pc, err = net.ListenUDP("udp", nil)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	c := &PacketConn{PacketConn: pc}
	d.track(&c.counts)
	return c, raddr, nil
}

// ReadFrom reads a datagram and counts its bytes.
func (c *PacketConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, addr, err := c.PacketConn.ReadFrom(p)
	c.count(&c.received, n)
	return n, addr, err
}

// WriteTo writes a datagram and counts its bytes.
func (c *PacketConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	n, err := c.PacketConn.WriteTo(p, addr)
	c.count(&c.sent, n)
	return n, err
}

// Close closes the socket and folds its counts into the dialer's totals.
func (c *PacketConn) Close() error {
	err := c.PacketConn.Close()
	c.fold()
	return err
}

// SetReadBuffer sets the socket's receive buffer (QUIC asks for a large
// one), where the socket has one.
func (c *PacketConn) SetReadBuffer(n int) error {
	if s, ok := c.PacketConn.(interface{ SetReadBuffer(int) error }); ok {
		return s.SetReadBuffer(n)
	}
	return errors.ErrUnsupported
}

// SetWriteBuffer sets the socket's send buffer, where it has one.
func (c *PacketConn) SetWriteBuffer(n int) error {
	if s, ok := c.PacketConn.(interface{ SetWriteBuffer(int) error }); ok {
		return s.SetWriteBuffer(n)
	}
	return errors.ErrUnsupported
}
