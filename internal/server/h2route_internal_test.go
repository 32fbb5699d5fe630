package server

import (
	"bytes"
	"io"
	"net"
	"testing"

	"golang.org/x/net/http2"
)

func TestRouteFor(t *testing.T) {
	for ct, want := range map[string]h2Route{
		"application/grpc":                      routeGRPC,
		"application/grpc+proto":                routeGRPC,
		"application/grpc+json":                 routeGRPC,
		"application/grpc;charset=utf-8":        routeGRPC,
		"Application/GRPC":                      routeGRPC,
		"application/grpc-web":                  routeHTTP,
		"application/grpc-web+proto":            routeHTTP,
		"application/grpc-web-text":             routeHTTP,
		"application/grpcx":                     routeHTTP,
		"application/json":                      routeHTTP,
		"application/x-protobuf":                routeHTTP,
		"application/proto":                     routeHTTP,
		"application/connect+proto":             routeHTTP,
		"":                                      routeHTTP,
		"text/plain; a=application/grpc":        routeHTTP,
		"application/grpc-web+proto; charset=x": routeHTTP,
	} {
		if got := routeFor(ct); got != want {
			t.Errorf("routeFor(%q) = %v, want %v", ct, got, want)
		}
	}
}

// TestH2ConnReleasesReplay: once the bytes read while sniffing are all
// replayed, the connection holds no reference to them (up to
// h2SniffBytes, some 288 KiB with the default header bound, for the
// connection's whole life otherwise), on both of its read paths: plain,
// and dropping the injected SETTINGS' ACK.
func TestH2ConnReleasesReplay(t *testing.T) {
	ack := []byte{0, 0, 0, byte(http2.FrameSettings), byte(http2.FlagSettingsAck), 0, 0, 0, 0}
	ping := []byte{0, 0, 8, byte(http2.FramePing), 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}
	for _, v := range []struct {
		name    string
		dropAck bool
		replay  []byte
		want    []byte
	}{
		{"plain", false, bytes.Repeat([]byte("x"), 300), bytes.Repeat([]byte("x"), 300)},
		{"dropping the ACK", true, append(append([]byte(http2.ClientPreface), ack...), ping...), append([]byte(http2.ClientPreface), ping...)},
	} {
		t.Run(v.name, func(t *testing.T) {
			client, srv := net.Pipe()
			defer client.Close()
			// The replay in a buffer with room to spare, as sniffH2's is.
			buf := bytes.NewBuffer(make([]byte, 0, 4<<10))
			buf.Write(v.replay)
			c := &h2Conn{Conn: srv, replay: buf.Bytes(), dropAck: v.dropAck}
			if v.dropAck {
				c.pass = len(http2.ClientPreface)
			}
			got := make([]byte, len(v.want))
			p := got
			for len(p) > 0 { // small reads, as a server's first ones may be
				n, err := c.Read(p[:min(len(p), 7)])
				if err != nil {
					t.Fatal(err)
				}
				p = p[n:]
			}
			if !bytes.Equal(got, v.want) {
				t.Fatalf("read % x, want % x", got, v.want)
			}
			if c.replay != nil {
				t.Errorf("after the replay the connection still holds it (len %d, cap %d)", len(c.replay), cap(c.replay))
			}
			go func() { _, _ = client.Write([]byte("after")) }()
			rest := make([]byte, 5)
			if _, err := io.ReadFull(c, rest); err != nil || string(rest) != "after" {
				t.Errorf("then the socket: %q, %v", rest, err)
			}
		})
	}
}
