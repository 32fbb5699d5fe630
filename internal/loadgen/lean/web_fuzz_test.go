package lean

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// webFrame is a 5-byte-prefixed frame.
func webFrame(flag byte, msg []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{flag}, uint32(len(msg))), msg...)
}

// FuzzWebReply: whatever body a gRPC-Web or Connect answer carries, the
// lean checks return (no panic), with an error classified by the call
// package (never a bare error: nothing here is a transport failure), and
// what they accept is gRPC framing the verifier can walk: whole
// length-prefixed messages, no longer than the body (gRPC-Web unary: one).
func FuzzWebReply(f *testing.F) {
	msg := []byte{0x0a, 0x0f, 'A', 'P', 'I', ' ', 'V', 'e', 'r', 's', 'i', 'o', 'n', ' ', '1', '.', '0'}
	f.Add(append(webFrame(0, msg), webFrame(flagTrailer, []byte("grpc-status: 0\r\n"))...), -1)
	f.Add(webFrame(flagTrailer, []byte("grpc-status: 13\r\ngrpc-message: boom\r\n")), -1)
	f.Add(append(webFrame(0, msg), webFrame(flagEndStream, []byte(`{}`))...), -1)
	f.Add(webFrame(flagEndStream, []byte(`{"error":{"code":"internal","message":"boom"}}`)), -1)
	f.Add(webFrame(0x40, msg), -1)
	f.Add(webFrame(0, msg)[:9], -1)
	f.Add([]byte{}, 14)
	f.Add([]byte(`{"code":"unavailable","message":"away"}`), -1)
	f.Fuzz(func(t *testing.T, body []byte, headerStatus int) {
		ok := reply{status: 200, typeOK: true, grpcStatus: headerStatus, body: body}
		bad := reply{status: 503, typeOK: false, grpcStatus: headerStatus, body: body}
		checks := map[string]func(reply) ([]byte, error){
			"grpc-web unary": grpcWebReply(true), "grpc-web stream": grpcWebReply(false),
			"connect unary": connectUnaryReply(nil), "connect stream": connectStreamReply,
		}
		for name, check := range checks {
			for _, r := range []reply{ok, bad} {
				data, err := check(r)
				if err != nil {
					var ce *call.Error
					if !errors.As(err, &ce) {
						t.Fatalf("%s: unclassified error %v", name, err)
					}
					continue
				}
				if name == "connect unary" {
					if len(data) != len(body)+5 {
						t.Fatalf("%s: %d bytes from a body of %d", name, len(data), len(body))
					}
					continue
				}
				if len(data) > len(body) {
					t.Fatalf("%s: %d bytes from a body of %d", name, len(data), len(body))
				}
				n, err := frames(data, nil)
				if err != nil {
					t.Fatalf("%s: accepted data the verifier cannot walk: %v", name, err)
				}
				if name == "grpc-web unary" && n != 1 {
					t.Fatalf("%s: accepted %d messages", name, n)
				}
			}
		}
	})
}

// TestWebReplyAllocs: checking a good gRPC-Web or Connect answer allocates
// nothing (the lean engine's calls allocate nothing once warm).
func TestWebReplyAllocs(t *testing.T) {
	msg := []byte{0x0a, 0x0f, 'A', 'P', 'I', ' ', 'V', 'e', 'r', 's', 'i', 'o', 'n', ' ', '1', '.', '0'}
	web := reply{status: 200, typeOK: true, grpcStatus: -1, body: append(webFrame(0, msg), webFrame(flagTrailer, []byte("grpc-status: 0\r\ngrpc-message: \r\n"))...)}
	stream := reply{status: 200, typeOK: true, grpcStatus: -1, body: append(webFrame(0, msg), webFrame(flagEndStream, []byte(`{}`))...)}
	unary := reply{status: 200, typeOK: true, grpcStatus: -1, body: msg}
	webCheck, unaryCheck := grpcWebReply(true), connectUnaryReply(nil)
	unaryCheck(unary) // grows its buffer
	for name, f := range map[string]func(){
		"grpc-web":       func() { webCheck(web) },
		"connect stream": func() { connectStreamReply(stream) },
		"connect unary":  func() { unaryCheck(unary) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %.0f allocations per answer", name, n)
		}
	}
}
