package lean

import (
	"bytes"
	"testing"
)

// FuzzWSRead: whatever frames the server sends, the WebSocket reader
// returns (no panic, no hang), and a message it accepts is never over
// maxWSMessage nor longer than the bytes it came from.
func FuzzWSRead(f *testing.F) {
	f.Add([]byte("\x81\x05hello\x88\x02\x03\xe8"))
	f.Add([]byte("\x01\x02he\x89\x02hi\x80\x03llo\x82\x7e\x00\x01x"))
	f.Add([]byte("\x81\x7f\x00\x00\x00\x00\x00\x01\x00\x00"))
	f.Add([]byte("\xc1\x00\x83\x00\x09\x00\x88\x01\x03"))
	f.Fuzz(func(t *testing.T, in []byte) {
		w := &wsConn{h: newH1Conn(&byteConn{r: bytes.NewReader(in)})}
		for range 64 {
			_, msg, err := w.read()
			if err != nil {
				return
			}
			if len(msg) > maxWSMessage || len(msg) > len(in) {
				t.Fatalf("a message of %d bytes from %d bytes", len(msg), len(in))
			}
		}
	})
}

// FuzzWSUpgrade: whatever the server answers an upgrade with, the reader
// returns, and accepts only a 101 with the key's Sec-WebSocket-Accept.
func FuzzWSUpgrade(f *testing.F) {
	const key = "dGhlIHNhbXBsZSBub25jZQ=="
	accept := wsAccept(key)
	f.Add([]byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 401 Unauthorized\r\nContent-Length: 12\r\n\r\n{\"error\":1}\n"))
	f.Add([]byte("HTTP/1.1 101 OK\r\nSec-WebSocket-Protocol: x\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		h := newH1Conn(&byteConn{r: bytes.NewReader(in)})
		if err := h.readUpgrade(accept, ""); err == nil && !bytes.Contains(in, []byte(accept)) {
			t.Fatalf("accepted an upgrade without the key's accept: %q", in)
		}
	})
}
