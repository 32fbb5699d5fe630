package wire

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/tcptest"
	"github.com/meteorbench/meteorbench/internal/tlsutil"
)

// echoTLS serves TLS on 127.0.0.1 offering ALPN protos, echoing one line.
func echoTLS(t *testing.T, protos ...string) (string, *x509.CertPool) {
	cert, _, err := tlsutil.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: protos})
	if err != nil {
		t.Fatal(err)
	}
	tcptest.Serve(t, ln, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.CopyN(c, c, 5)
	})
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	return ln.Addr().String(), pool
}

func TestDialerTLS(t *testing.T) {
	addr, pool := echoTLS(t, "h2", "http/1.1")
	d := &Dialer{TLS: &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 2 {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if tc, ok := c.(*tls.Conn); !ok || tc.ConnectionState().NegotiatedProtocol != "http/1.1" {
			t.Fatalf("conn %T, want *tls.Conn with ALPN http/1.1", c)
		}
		io.WriteString(c, "hello")
		b := make([]byte, 5)
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "hello" {
			t.Fatalf("echo: %q, %v", b, err)
		}
		c.Close()
	}
	h, sum := d.Handshakes()
	if h == nil || h.TotalCount() != 2 || sum <= 0 {
		t.Fatalf("handshakes: %v, sum %v; want 2", h, sum)
	}
	if s := d.Stats(); s.Dials != 2 || s.Sent < 2*(5+200) || s.Received < 2*(5+200) {
		t.Errorf("stats %+v: want 2 dials and the handshakes' bytes counted", s)
	}
}

func TestDialerTLSNoH2(t *testing.T) {
	addr, pool := echoTLS(t) // no ALPN at all: Go's server then accepts any offer
	d := &Dialer{TLS: &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}}}
	_, err := d.DialContext(context.Background(), "tcp", addr)
	if err == nil || !strings.Contains(err.Error(), "h2") {
		t.Fatalf("dial a server without h2: %v, want an ALPN error", err)
	}
	if h, _ := d.Handshakes(); h != nil {
		t.Error("a refused connection's handshake was recorded")
	}
}

func TestDialerTLSUntrusted(t *testing.T) {
	addr, _ := echoTLS(t, "http/1.1")
	d := &Dialer{TLS: &tls.Config{RootCAs: x509.NewCertPool(), NextProtos: []string{"http/1.1"}}}
	if _, err := d.DialContext(context.Background(), "tcp", addr); err == nil {
		t.Fatal("dial with an untrusted certificate: no error")
	}
}
