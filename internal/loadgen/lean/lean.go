// Package lean is the lean engine (run --engine lean; capacity's default):
// clients that cost the load generator as little CPU per call as wrk and
// h2load do, so that the server, not the generator, is what a run
// measures. It plugs in through the same call.Client and call.Caller as
// the standard engine (net/http and grpc-go, every answer fully decoded),
// over the same counted connections (wire.Dialer), so timers, byte
// counts, error classes and reporters are shared.
//
//   - REST and REST+protobuf: a minimal HTTP/1.1 client (http1.go). The
//     request is the standard caller's, serialised once
//     (restcall.Exchange); one kept-alive connection per caller; the
//     status line, headers and a Content-Length or chunked body are read
//     exactly, in place.
//   - gRPC: HTTP/2 frames (h2conn.go, grpc.go) with x/net/http2's Framer
//     and hpack: request frames encoded once, many concurrent streams per
//     connection, the requests of the callers ready at once written in one
//     write, one reader goroutine per connection handing each answer to
//     the caller waiting for it (it never writes), one writer goroutine
//     for the control frames it owes.
//   - REST over HTTP/2, gRPC-Web and Connect (call.Options.HTTPVersion,
//     web.go): over HTTP/1.1, the REST client's connections; over HTTP/2,
//     the gRPC client's; the framing of gRPC-Web and Connect written and
//     read here, by hand, and checked hard.
//
// Every answer is checked: status, media type, framing, lengths, and its
// bytes against the last answer that was fully decoded and validated. An
// answer that differs from it is fully decoded and validated, and so is a
// deterministic sample (verify.go), so a wrong answer still counts as an
// invalid response without decoding every one.
package lean

import (
	"fmt"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/webcall"
)

// Engine names (the registry of engines, and what each supports, is
// loadgen's engines). Standard is the default of run: net/http and
// grpc-go, as a user's own Go clients would call (and pay to decode every
// answer).
const (
	Standard = "standard"
	Lean     = "lean"
)

// New opens a lean client of protocol under o.
func New(protocol api.Protocol, o call.Options) (call.Client, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Compress != "" {
		return nil, fmt.Errorf("lean: no compression (%q): use --engine standard", o.Compress)
	}
	switch protocol {
	case api.REST, api.RESTProtobuf, webcall.GRPCWeb, webcall.Connect:
		if o.IsHTTP2() {
			return &webH2Client{grpcClient: newGRPC(o), protocol: protocol}, nil
		}
		if protocol == api.REST || protocol == api.RESTProtobuf {
			return newREST(protocol, o), nil
		}
		return &webH1Client{newREST(protocol, o)}, nil
	case api.GRPC:
		return newGRPC(o), nil
	}
	return nil, fmt.Errorf("lean: unknown protocol %q", protocol)
}
