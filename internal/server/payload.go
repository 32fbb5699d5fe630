package server

// The user's payload (Config.Payload) in place of the meteorites: the REST
// routes answer its items, and the gRPC service meteorbench.payload.Payload
// (a hand-built grpc.ServiceDesc, its messages encoded by the payload's
// compiled codec) replaces MeteoriteLandingsService, with server reflection
// describing it. Every answer is encoded per request, as the meteorites are.

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/payload"
)

// servePayload answers a list or stream call with n of the payload's items.
func (h *restHandler) servePayload(rw *respWriter, m method, n int) {
	p := h.s.payload
	items := p.Items(n)
	switch {
	case m == methodGetLargePayloadAsList && rw.p == protoRESTProtobuf:
		room := p.MaxItemBytes()
		writeEntriesProto(rw, n, func(buf *bytes.Buffer, i int) error {
			buf.Grow(room)
			b, err := items.AppendEntry(buf.AvailableBuffer(), i)
			buf.Write(b)
			return err
		}, h.s.encoders)
	case m == methodGetLargePayloadAsList:
		// A wrapped list's answer is the object around the items, as the
		// sample has it, encoded with the items.
		open, close, err := items.Around(rw.json().Marshal)
		if err != nil {
			rw.failed = true
			writeError(rw, http.StatusInternalServerError, "internal server error")
			return
		}
		writeArrayJSON(rw, n, items.JSON, h.s.encoders, open, close)
	case rw.p == protoRESTProtobuf:
		streamDelimited(rw, n, h.s.encoders, items.AppendDelimited)
	default:
		streamLines(rw, n, items.ItemJSON, h.s.encoders)
	}
}

// decodePayloadBody decodes an upload of the payload's items.
func (h *restHandler) decodePayloadBody(jc *jsoncodec.Codec, body io.Reader, length int64, isProto bool) error {
	p := h.s.payload
	if !isProto {
		v := p.NewList()
		if err := decodeArrayJSON(jc, body, length, v); err != nil {
			return err
		}
		return p.CheckDecoded(v)
	}
	return readAll(body, length, func(b []byte) error {
		_, err := p.DecodeList(b)
		return err
	})
}

// payloadService is the gRPC side of the payload.
type payloadService struct {
	s   *Server
	p   *payload.Payload
	hdr metadata.MD
}

// registerPayload registers the payload's service and the reflection
// services describing it (and everything else registered).
func (s *Server) registerPayload(gs *grpc.Server) {
	ps := &payloadService{s: s, p: s.payload, hdr: metadata.Pairs(api.MetadataPayload, s.payload.ID())}
	method := func(name string, h func(ps *payloadService, ctx context.Context, req any) (any, error)) grpc.MethodDesc {
		info := &grpc.UnaryServerInfo{Server: ps, FullMethod: "/" + payload.ServiceName + "/" + name}
		handler := func(ctx context.Context, req any) (any, error) { return h(ps, ctx, req) }
		return grpc.MethodDesc{MethodName: name, Handler: func(_ any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			var req any = new(pb.EmptyRequest)
			if name == api.MethodPostLargePayload {
				req = &payload.List{P: ps.p}
			}
			if err := dec(req); err != nil {
				return nil, err
			}
			if ic == nil {
				return handler(ctx, req)
			}
			return ic(ctx, req, info, handler)
		}}
	}
	desc := grpc.ServiceDesc{
		ServiceName: payload.ServiceName,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{
			method(api.MethodGetVersion, (*payloadService).version),
			method(api.MethodGetLargePayloadAsList, (*payloadService).list),
			method(api.MethodPostLargePayload, (*payloadService).post),
		},
		Streams: []grpc.StreamDesc{{
			StreamName:    api.MethodGetLargePayload,
			ServerStreams: true,
			Handler:       func(_ any, st grpc.ServerStream) error { return ps.stream(st) },
		}},
		Metadata: s.payload.Service.ParentFile().Path(),
	}
	gs.RegisterService(&desc, ps)
	opts := reflection.ServerOptions{
		Services:           gs,
		DescriptorResolver: resolvers{s.payload.Files, protoregistry.GlobalFiles},
		ExtensionResolver:  protoregistry.GlobalTypes,
	}
	reflectionv1.RegisterServerReflectionServer(gs, reflection.NewServerV1(opts))
	reflectionv1alpha.RegisterServerReflectionServer(gs, reflection.NewServer(opts))
}

func (ps *payloadService) version(ctx context.Context, _ any) (any, error) {
	_ = grpc.SetHeader(ctx, ps.hdr)
	return ps.s.version, nil
}

func (ps *payloadService) list(ctx context.Context, _ any) (any, error) {
	_ = grpc.SetHeader(ctx, ps.hdr)
	n, err := grpcRecordsOr(ctx, ps.p.Len())
	if err != nil {
		return nil, err
	}
	if err := acquireCharge(ctx, laneList, int64(n)*int64(ps.p.ItemBytes())); err != nil {
		return nil, err
	}
	return &payload.List{P: ps.p, Items: ps.p.Items(n)}, nil
}

// post answers an upload; grpc-go decoded its items (a message that does
// not decode gets INVALID_ARGUMENT from the interceptor, codec.go).
func (ps *payloadService) post(ctx context.Context, _ any) (any, error) {
	_ = grpc.SetHeader(ctx, ps.hdr)
	return ps.s.success, nil
}

// stream sends the items one message each, charged as GetLargePayload's are.
func (ps *payloadService) stream(st grpc.ServerStream) error {
	if err := st.RecvMsg(new(pb.EmptyRequest)); err != nil {
		return err
	}
	ctx := st.Context()
	_ = st.SetHeader(ps.hdr)
	n, err := grpcRecordsOr(ctx, ps.p.Len())
	if err != nil {
		return err
	}
	items := ps.p.Items(n)
	est := int64(ps.p.ItemBytes())
	budget := sendBudgetFrom(ctx)
	one := &payload.One{P: ps.p, Items: items} // encoded within SendMsg: reused
	for i := range n {
		if err := acquireCharge(ctx, laneStream, est); err != nil {
			budget.refund(laneStream, min(int64(i)*est, streamRefund))
			return err
		}
		one.I = i
		if err := st.SendMsg(one); err != nil {
			dropCharge(ctx)
			budget.refund(laneStream, min(int64(i)*est, streamRefund))
			return err
		}
	}
	return nil
}

// resolvers finds descriptors in the payload's files first, then in the
// program's (health, reflection, the contract).
type resolvers [2]interface {
	FindFileByPath(string) (protoreflect.FileDescriptor, error)
	FindDescriptorByName(protoreflect.FullName) (protoreflect.Descriptor, error)
}

func (r resolvers) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	f, err := r[0].FindFileByPath(path)
	if err != nil {
		return r[1].FindFileByPath(path)
	}
	return f, nil
}

func (r resolvers) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	d, err := r[0].FindDescriptorByName(name)
	if err != nil {
		return r[1].FindDescriptorByName(name)
	}
	return d, nil
}
