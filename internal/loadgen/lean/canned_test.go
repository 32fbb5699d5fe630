package lean_test

import (
	"bytes"
	"net"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/lean"
	"github.com/meteorbench/meteorbench/internal/tcptest"
)

// canned is a server that answers every HTTP/1.1 request on a connection
// with the same bytes, allocating nothing per request: a benchmark against
// it counts the client's allocations alone.
func canned(t testing.TB, answer []byte) string {
	return tcptest.Start(t, func(c net.Conn) {
		buf := make([]byte, 64<<10)
		n := 0
		for {
			m, err := c.Read(buf[n:])
			if err != nil {
				return
			}
			n += m
			if i := bytes.Index(buf[:n], []byte("\r\n\r\n")); i >= 0 {
				n = copy(buf, buf[i+4:n])
				if _, err := c.Write(answer); err != nil {
					return
				}
			}
		}
	})
}

// BenchmarkRESTClient is the lean REST client's own cost per small call in
// the steady state (past its first second: one call in 100 decoded), with
// its allocations: against a canned answer, Content-Length and chunked.
func BenchmarkRESTClient(b *testing.B) {
	for _, tc := range []struct{ name, answer string }{
		{"length", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Tue, 01 Dec 2026 22:00:00 GMT\r\nContent-Length: 18\r\n\r\n\"API Version 1.0\"\n"},
		{"chunked", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n\"API \r\nd\r\nVersion 1.0\"\n\r\n0\r\n\r\n"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			benchCalls(b, lean.New, api.REST, api.Small, canned(b, []byte(tc.answer)), true)
		})
	}
}
