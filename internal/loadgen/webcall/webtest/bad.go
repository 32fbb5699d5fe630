package webtest

import (
	"encoding/binary"
	"net/http"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/webcall"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
)

// frame is a 5-byte-prefixed frame.
func frame(flag byte, msg []byte) []byte {
	b := binary.BigEndian.AppendUint32([]byte{flag}, uint32(len(msg)))
	return append(b, msg...)
}

func versionMsg() []byte {
	b, _ := proto.Marshal(&pb.Version{ApiVersion: data.Version})
	return b
}

// BadAnswer is an answer made by hand for a protocol, and the class a
// call that gets it must be given, by either engine.
type BadAnswer struct {
	Name     string
	Protocol api.Protocol
	Stream   bool // the stream scenario (else small)
	Write    func(w http.ResponseWriter)
	Want     results.ErrorClass
}

// BadAnswers are the bad answers both engines' tests give their clients.
func BadAnswers() []BadAnswer { return badAnswers }

var badAnswers = []BadAnswer{
	{"grpc-status 13 in the trailer frame", webcall.GRPCWeb, false, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/grpc-web+proto")
		w.Write(frame(0x80, []byte("grpc-status: 13\r\ngrpc-message: boom\r\n")))
	}, results.GRPCClass("Internal")},
	{"grpc-status 14 in the headers (trailers-only)", webcall.GRPCWeb, false, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/grpc-web+proto")
		w.Header().Set("Grpc-Status", "14")
		w.Header().Set("Grpc-Message", "away")
	}, results.GRPCClass("Unavailable")},
	{"a truncated frame", webcall.GRPCWeb, false, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/grpc-web+proto")
		b := frame(0, versionMsg())
		w.Write(b[:len(b)-3])
	}, results.ClassProtocol},
	{"a bad flag", webcall.GRPCWeb, false, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/grpc-web+proto")
		w.Write(frame(0x40, versionMsg()))
		w.Write(frame(0x80, []byte("grpc-status: 0\r\n")))
	}, results.ClassProtocol},
	{"no trailer frame", webcall.GRPCWeb, false, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/grpc-web+proto")
		w.Write(frame(0, versionMsg()))
	}, results.ClassProtocol},
	{"a wrong content type", webcall.GRPCWeb, false, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html>"))
	}, results.ClassInvalid},
	{"a wrong version", webcall.GRPCWeb, false, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/grpc-web+proto")
		b, _ := proto.Marshal(&pb.Version{ApiVersion: "API Version 0.9"})
		w.Write(frame(0, b))
		w.Write(frame(0x80, []byte("grpc-status: 0\r\n")))
	}, results.ClassInvalid},
	{"Connect error JSON", webcall.Connect, false, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"code":"unavailable","message":"away"}`))
	}, results.GRPCClass("Unavailable")},
	{"Connect 502 without JSON", webcall.Connect, false, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte(`bad gateway`))
	}, results.HTTPClass(502)},
	{"Connect unary: a wrong content type", webcall.Connect, false, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/html")
		w.Write(versionMsg())
	}, results.ClassInvalid},
	{"Connect unary: not protobuf", webcall.Connect, false, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/proto")
		w.Write([]byte{0xff, 0xff, 0xff})
	}, results.ClassInvalid},
	{"Connect stream: error in the end-stream frame", webcall.Connect, true, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/connect+proto")
		w.Write(frame(0x02, []byte(`{"error":{"code":"internal","message":"boom"}}`)))
	}, results.GRPCClass("Internal")},
	{"Connect stream: a bad flag", webcall.Connect, true, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/connect+proto")
		w.Write(frame(0x80, []byte(`{}`)))
	}, results.ClassProtocol},
	{"Connect stream: a truncated frame", webcall.Connect, true, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/connect+proto")
		w.Write(frame(0, []byte{1, 2, 3})[:6])
	}, results.ClassProtocol},
}

// RunBadAnswers runs check as a subtest for each bad answer over HTTP/1.1
// and HTTP/2, against a server of its own that gives the bad answer to
// every call without an Authorization header (a call with a token gets a
// good one). o is a one-worker client's options for that server and HTTP
// version (no token), sc the scenario the answer is for.
func RunBadAnswers(t *testing.T, check func(t *testing.T, tc BadAnswer, o call.Options, sc api.Scenario)) {
	for _, tc := range badAnswers {
		for _, v := range []string{call.HTTP11, call.HTTP2} {
			t.Run(tc.Name+"/"+v, func(t *testing.T) {
				srv := Start(t, Config{Raw: func(w http.ResponseWriter, r *http.Request) bool {
					if r.Header.Get("Authorization") != "" {
						return false // the good call
					}
					tc.Write(w)
					return true
				}})
				sc := api.Small
				if tc.Stream {
					sc = api.Stream
				}
				check(t, tc, call.Options{Target: srv.Addr, Workers: 1, Dialer: &wire.Dialer{}, Settings: map[string]string{call.SettingHTTPVersion: v}}, sc)
			})
		}
	}
}
