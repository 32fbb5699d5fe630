package server

// gRPC-Web and Connect on the same port (api.PathRPCPrefix), served by
// connectrpc.com/connect's handlers for the contract's four RPCs (and the
// stream methods where the protocols carry them: connectstreams.go), built
// with its generic API on the generated messages (gen/ is unchanged), over
// HTTP/1.1 and HTTP/2 (h2route.go). The same records and answers as gRPC;
// the same budget: a large call is charged before connect reads or writes
// anything and released after its answer is written (connectAdmit), an
// upload's body as it is read (budgetBody), a list answer is encoded in an
// encoding slot (connectCodec). A request of another content-type gets a
// 415 with a JSON message naming the accepted ones, before connect sees
// it.
//
// What connect does its own way: it marshals a unary answer into a pooled
// buffer and writes it (a second copy of a list answer, which the charge
// covers); it keeps buffers up to 8 MiB in its pool across calls. It
// speaks gRPC too: a gRPC call of the contract's service on an HTTP/2
// connection net/http serves is answered here (counted as grpc), at about
// three quarters of the CPU grpc-go's ServeHTTP takes for a small call
// (h2route.go); any other gRPC call there (health, reflection) goes to
// grpc-go through ServeHTTP (serveGRPC).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
)

// connectHandler serves the RPCs under api.PathRPCPrefix.
type connectHandler struct {
	s      *Server
	routes map[string]connectRoute // by path
}

type connectRoute struct {
	m method
	h http.Handler
	// webOnly: gRPC calls of this method on a connection net/http serves
	// go to grpc-go (serveGRPC), as before connect served it (the stream
	// methods, connectstreams.go).
	webOnly bool
	// clientStream: a client or bidirectional stream, which gRPC-Web
	// does not carry.
	clientStream bool
}

// newConnectHandler builds the handlers of the contract's service. Nil
// when the server serves a payload (payload.go): its service is gRPC only.
func newConnectHandler(s *Server) *connectHandler {
	if s.payload != nil {
		return nil
	}
	opts := connect.WithHandlerOptions(
		connect.WithCodec(connectCodec{slots: s.encoders}),
		connect.WithReadMaxBytes(int(s.cfg.MaxBody)),
		connect.WithRecover(func(context.Context, connect.Spec, http.Header, any) error {
			return connect.NewError(connect.CodeInternal, errors.New("internal server error"))
		}),
	)
	c := &connectHandler{s: s}
	svc := &grpcService{s: s}
	c.routes = map[string]connectRoute{
		pb.MeteoriteLandingsService_GetVersion_FullMethodName: {m: methodGetVersion, h: connect.NewUnaryHandler(
			pb.MeteoriteLandingsService_GetVersion_FullMethodName,
			func(ctx context.Context, req *connect.Request[pb.EmptyRequest]) (*connect.Response[pb.Version], error) {
				return unaryAnswer(connectCall(c, ctx, req, methodGetVersion, func(context.Context) (*pb.Version, error) {
					return s.version, nil
				}))
			}, opts)},
		pb.MeteoriteLandingsService_GetLargePayloadAsList_FullMethodName: {m: methodGetLargePayloadAsList, h: connect.NewUnaryHandler(
			pb.MeteoriteLandingsService_GetLargePayloadAsList_FullMethodName,
			func(ctx context.Context, req *connect.Request[pb.EmptyRequest]) (*connect.Response[pb.MeteoriteLandingList], error) {
				return unaryAnswer(connectCall(c, ctx, req, methodGetLargePayloadAsList, func(context.Context) (*pb.MeteoriteLandingList, error) {
					n, err := connectRecords(req.Header())
					if err != nil {
						return nil, err
					}
					list, err := s.listMessage(n)
					if err != nil {
						return nil, connect.NewError(connect.CodeInternal, errors.New("internal server error"))
					}
					return list, nil
				}))
			}, opts)},
		pb.MeteoriteLandingsService_GetLargePayload_FullMethodName: {m: methodGetLargePayload, h: connect.NewServerStreamHandler(
			pb.MeteoriteLandingsService_GetLargePayload_FullMethodName,
			func(ctx context.Context, req *connect.Request[pb.EmptyRequest], stream *connect.ServerStream[pb.MeteoriteLanding]) error {
				_, err := connectCall(c, ctx, req, methodGetLargePayload, func(ctx context.Context) (*struct{}, error) {
					n, err := connectRecords(req.Header())
					if err != nil {
						return nil, err
					}
					_, msgs, err := s.records(n)
					if err != nil {
						return nil, connect.NewError(connect.CodeInternal, errors.New("internal server error"))
					}
					for _, m := range msgs {
						if err := stream.Send(m); err != nil {
							return nil, err
						}
					}
					return nil, nil
				})
				return err
			}, opts)},
		pb.MeteoriteLandingsService_PostLargePayload_FullMethodName: {m: methodPostLargePayload, h: connect.NewUnaryHandler(
			pb.MeteoriteLandingsService_PostLargePayload_FullMethodName,
			func(ctx context.Context, req *connect.Request[pb.MeteoriteLandingList]) (*connect.Response[pb.StatusResponse], error) {
				return unaryAnswer(connectCall(c, ctx, req, methodPostLargePayload, func(ctx context.Context) (*pb.StatusResponse, error) {
					resp, err := svc.PostLargePayload(ctx, req.Msg)
					if err != nil {
						return nil, connect.NewError(connect.CodeInvalidArgument, errors.New(boundEcho(err.Error())))
					}
					return resp, nil
				}))
			}, opts)},
	}
	maps.Copy(c.routes, c.connectStreamRoutes(opts)) // connectstreams.go
	return c
}

func unaryAnswer[T any](m *T, err error) (*connect.Response[T], error) {
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(m), nil
}

// connectProtocol maps a call's protocol (connect's Peer().Protocol) to
// its counters.
func connectProtocol(p string) protocol {
	switch p {
	case connect.ProtocolGRPCWeb:
		return protoGRPCWeb
	case connect.ProtocolGRPC:
		return protoGRPC
	}
	return protoConnect
}

// connectCall does, around one RPC, what the gRPC interceptors do: auth,
// counting and counting errors (a panic: connect.WithRecover).
func connectCall[T any](c *connectHandler, ctx context.Context, req connectPeer, m method, f func(context.Context) (*T, error)) (*T, error) {
	s := c.s
	if s.token != nil && !bearerIn(headerOf(req).Values("Authorization"), s.token) {
		return nil, connect.NewError(connect.CodeUnauthenticated, errors.New("missing or wrong bearer token"))
	}
	p := connectProtocol(req.Peer().Protocol)
	s.metrics.requests[p][m].Inc()
	ok := false
	defer func() {
		if !ok {
			s.metrics.errors[p][m].Inc()
		}
	}()
	if s.panicHook != nil {
		s.panicHook()
	}
	if ch, _ := ctx.Value(connectChargeKey{}).(*connectCharge); ch != nil {
		release, err := s.admitCtx(ctx, ch.n) // restanswer.go
		if err != nil {
			return nil, connect.NewError(connect.CodeResourceExhausted, err)
		}
		ch.release = release
	}
	resp, err := f(ctx)
	ok = err == nil
	return resp, err
}

// connectPeer is what connectCall reads of a call: a unary or server
// stream's request, or a client or bidirectional stream.
type connectPeer interface{ Peer() connect.Peer }

func headerOf(req connectPeer) http.Header {
	switch r := req.(type) {
	case interface{ Header() http.Header }:
		return r.Header()
	case interface{ RequestHeader() http.Header }:
		return r.RequestHeader()
	}
	return http.Header{}
}

// connectRecords reads the records header (api.MetadataRecords), as
// grpcRecords reads the metadata.
func connectRecords(h http.Header) (int, error) {
	vs := h.Values(api.MetadataRecords)
	switch len(vs) {
	case 0:
		return api.DefaultRecords, nil
	case 1:
		n, err := parseRecordCount(vs[0])
		if err != nil {
			return 0, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("header %s: %w", api.MetadataRecords, err))
		}
		return n, nil
	}
	return 0, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("header %s: %w", api.MetadataRecords, errRecordsTwice))
}

// serves reports whether c has a route for path (false when c is nil).
func (c *connectHandler) serves(path string) bool {
	if c == nil {
		return false
	}
	r, ok := c.routes[path]
	return ok && !r.webOnly
}

// connectTypes are the content-types served: gRPC-Web and Connect with
// protobuf, and gRPC (which connect also speaks).
var connectTypes = []string{api.TypeGRPCWeb, api.TypeGRPCWebProto, api.TypeConnectProto, api.TypeConnectStreamProto, api.TypeGRPC, api.TypeGRPCProto}

// ServeHTTP serves one call under api.PathRPCPrefix: an unknown method is
// a 404, a content-type connect would not serve with protobuf a 415, both
// with a JSON message; a large call is charged to the budget before
// connect starts and released once it is done.
func (c *connectHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	route, ok := c.routes[r.URL.Path]
	if !ok {
		writeError(w, http.StatusNotFound, "no such method: "+r.URL.Path)
		return
	}
	ct := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Type")))
	base, _, _ := strings.Cut(ct, ";")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "RPCs are called with POST")
		return
	}
	if !slices.Contains(connectTypes, strings.TrimSpace(base)) {
		writeError(w, http.StatusUnsupportedMediaType, "Content-Type must be one of "+strings.Join(connectTypes, ", "))
		return
	}
	base = strings.TrimSpace(base)
	if route.clientStream && (base == api.TypeGRPCWeb || base == api.TypeGRPCWebProto) {
		c.refuseGRPCWebStream(w, r, route.m) // connectstreams.go
		return
	}
	if (base == api.TypeGRPC || base == api.TypeGRPCProto) && !grpcCompressed(r.Header) {
		// A gRPC call answered here (on a connection net/http owns: one a
		// pooling proxy opened with another call) is answered as grpc-go's
		// own server answers it: compressed only when the call is. connect
		// would gzip for any client that merely lists gzip in
		// grpc-accept-encoding, which every grpc-go client does.
		r.Header.Del("Grpc-Accept-Encoding")
	}
	var charge int64
	// connect compresses an answer when the client accepts gzip (connect-go
	// clients say so by default): charged as REST's gzip answers are.
	gz := acceptsGzip(r.Header["Accept-Encoding"]) || acceptsGzip(r.Header["Connect-Accept-Encoding"]) ||
		acceptsGzip(r.Header["Grpc-Accept-Encoding"])
	switch route.m {
	case methodGetLargePayloadAsList:
		n, err := connectRecords(r.Header)
		if err != nil {
			n = 1 // connect answers the error
		}
		charge = listCharge(int64(n)*estRecordBytes, gz)
	case methodGetLargePayload:
		charge = streamCharge(gz)
	case methodFeed, methodUploadStream, methodChat:
		// A stream holds one message at a time (connectstreams.go): it
		// is charged for itself, as REST's streams are.
		charge = callOverhead
		sw := newStreamWatch(w, c.s.drainCtx)
		defer sw.stop()
		r = r.WithContext(context.WithValue(r.Context(), streamWatchKey{}, sw))
	case methodPostLargePayload:
		charge = callOverhead
		bb := &budgetBody{r: http.MaxBytesReader(w, r.Body, c.s.cfg.MaxBody), h: c.s.rest, req: r} // restanswer.go
		defer bb.release()
		r.Body = readCloser{bb, r.Body}
	}
	switch {
	case route.m == methodPostLargePayload:
		// Before connect reads the body: refused with a 503 and a close.
		release, ok := c.s.rest.admit(w, r, charge, true) // restanswer.go
		if !ok {
			return
		}
		defer release()
	case charge > 0:
		// Charged by connectCall, so that a refusal is the protocol's
		// own RESOURCE_EXHAUSTED, and given back here, once the answer
		// is written.
		ch := &connectCharge{n: charge}
		r = r.WithContext(context.WithValue(r.Context(), connectChargeKey{}, ch))
		defer ch.done()
	}
	route.h.ServeHTTP(w, r)
}

// grpcCompressed reports whether a gRPC call's messages are compressed:
// a grpc-encoding other than identity.
func grpcCompressed(h http.Header) bool {
	e := strings.TrimSpace(h.Get("Grpc-Encoding"))
	return e != "" && e != "identity"
}

// connectCharge is a large call's charge, taken by connectCall and given
// back by ServeHTTP after connect has written the answer.
type connectCharge struct {
	n       int64
	release func()
}

type connectChargeKey struct{}

func (c *connectCharge) done() {
	if c.release != nil {
		c.release()
	}
}

type readCloser struct {
	io.Reader
	io.Closer
}

// connectCodec is connect's protobuf codec: a list answer holds an
// encoding slot while it is encoded, as on the REST and gRPC paths
// (codec.go), and is appended to connect's pooled buffer.
type connectCodec struct{ slots encodeSlots }

func (connectCodec) Name() string { return "proto" }

func (c connectCodec) Marshal(v any) ([]byte, error) { return c.MarshalAppend(nil, v) }

func (c connectCodec) MarshalAppend(dst []byte, v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("cannot marshal %T", v)
	}
	if _, ok := m.(*pb.MeteoriteLandingList); ok {
		c.slots.acquire()
		defer c.slots.release()
	}
	return proto.MarshalOptions{}.MarshalAppend(dst, m)
}

func (connectCodec) Unmarshal(b []byte, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("cannot unmarshal into %T", v)
	}
	if err := proto.Unmarshal(b, m); err != nil {
		return fmt.Errorf("malformed protobuf request: %w", err)
	}
	return nil
}
