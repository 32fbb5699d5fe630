package lean

import (
	"bytes"
	"net"
	"testing"
	"time"
)

// byteConn is a connection whose peer's answer is fixed bytes; writes
// vanish.
type byteConn struct {
	net.Conn
	r *bytes.Reader
}

func (c *byteConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *byteConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *byteConn) SetDeadline(time.Time) error { return nil }
func (c *byteConn) Close() error                { return nil }

// FuzzRoundTrip: whatever the peer answers, the HTTP/1.1 reader returns
// (no panic, no hang), and a body it accepts is never longer than the
// answer it came from.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 18\r\n\r\n\"API Version 1.0\"\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 25\r\nConnection: close\r\n\r\n{\"error\":\"overloaded x\"}\n"))
	f.Add([]byte("HTTP/1.0 200 OK\r\n\r\n"))
	f.Fuzz(func(t *testing.T, answer []byte) {
		h := newH1Conn(&byteConn{r: bytes.NewReader(answer)})
		body, _, _ := h.roundTrip([]byte("GET / HTTP/1.1\r\n\r\n"), "application/json", nil)
		if len(body) > len(answer) {
			t.Fatalf("a body of %d bytes from an answer of %d", len(body), len(answer))
		}
	})
}
