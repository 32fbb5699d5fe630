package wire

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/meteorbench/meteorbench/internal/tcptest"
)

func TestDialerCounts(t *testing.T) {
	addr := tcptest.Start(t, func(c net.Conn) {
		buf := make([]byte, 10)
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		c.Write(make([]byte, 25)) // answer 25 bytes to 10
	})

	var d Dialer
	for i := 0; i < 3; i++ {
		c, err := d.DialContext(context.Background(), "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(make([]byte, 10)); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, make([]byte, 25)); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			c.Close() // two closed, one still open
			c.Close() // closing twice counts once
		}
	}
	got := d.Stats()
	if want := (Stats{Dials: 3, Sent: 30, Received: 75}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
	if len(d.live) != 1 {
		t.Errorf("%d live connections tracked, want 1", len(d.live))
	}
	if _, err := d.DialTCP(context.Background(), "127.0.0.1:1"); err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
	if got := d.Stats().Dials; got != 3 {
		t.Errorf("a failed dial counted: %d dials", got)
	}
}

// A Read or Write that returns while Close folds the connection into the
// totals still has its bytes counted, once.
func TestBytesAfterCloseAreCounted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var d Dialer
	nc, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := nc.(*Conn)
	c.count(&c.received, 7) // before Close: folded by Close
	c.Close()
	c.count(&c.received, 5) // returned after Close's fold
	c.count(&c.sent, 3)
	c.Close() // a second Close folds nothing twice
	if s := d.Stats(); s.Received != 12 || s.Sent != 3 || s.Dials != 1 {
		t.Fatalf("stats %+v, want received 12, sent 3, dials 1", s)
	}
}

// Bytes moved by the caller's own system calls (Sent, Received) count as
// Write's and Read's do, before and after the connection's close.
func TestCountedByCaller(t *testing.T) {
	addr := tcptest.Start(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	var d Dialer
	c, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	wc := c.(*Conn)
	wc.Sent(120)
	wc.Received(126)
	if got, want := d.Stats(), (Stats{Dials: 1, Sent: 120, Received: 126}); got != want {
		t.Errorf("open: Stats() = %+v, want %+v", got, want)
	}
	c.Close()
	wc.Received(4) // a read that returned after the close
	wc.Sent(0)
	if got, want := d.Stats(), (Stats{Dials: 1, Sent: 120, Received: 130}); got != want {
		t.Errorf("closed: Stats() = %+v, want %+v", got, want)
	}
}
