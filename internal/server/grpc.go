package server

import (
	"context"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/payload"
)

// Keep-alive settings of the gRPC side.
const (
	// keepaliveTime: after this long without activity the server pings the
	// client, and closes the connection if no answer comes within
	// keepaliveTimeout (dead peers on a lossy network).
	keepaliveTime    = time.Minute
	keepaliveTimeout = 20 * time.Second
	// keepaliveMinTime: clients pinging more often than this get GOAWAY
	// (too_many_pings). grpc-go clients never ping more often than every
	// 10 s anyway.
	keepaliveMinTime = 10 * time.Second
)

var (
	errUnauthenticated = status.Error(codes.Unauthenticated, "missing or wrong bearer token")
	errInternal        = status.Error(codes.Internal, "internal server error")
)

// newGRPCServer builds the gRPC side: the data service, health and
// reflection, hardened for an exposed host.
func (s *Server) newGRPCServer() *grpc.Server {
	gs := grpc.NewServer(
		grpc.Creds(budgetCreds{limits: laneLimits, stall: s.cfg.WriteTimeout, log: s.log, mem: s.mem}), // limits.go
		grpc.MaxRecvMsgSize(int(s.cfg.MaxBody)),
		grpc.MaxConcurrentStreams(s.cfg.MaxConcurrentStreams),
		grpc.MaxHeaderListSize(uint32(s.cfg.MaxHeaderBytes)),
		grpc.ConnectionTimeout(s.cfg.HeaderTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle: s.cfg.IdleTimeout,
			Time:              keepaliveTime,
			Timeout:           keepaliveTimeout,
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime:             keepaliveMinTime,
			PermitWithoutStream: true,
		}),
		grpc.StatsHandler(chargeStats{}), // charge.go
		grpc.ForceServerCodecV2(s.codec), // codec.go
		grpc.InTapHandle(s.tap),
		grpc.UnaryInterceptor(s.unaryInterceptor),
		grpc.StreamInterceptor(s.streamInterceptor),
	)
	healthpb.RegisterHealthServer(gs, s.health)
	if s.payload != nil {
		s.registerPayload(gs) // payload.go
		s.health.SetServingStatus(payload.ServiceName, healthpb.HealthCheckResponse_SERVING)
		return gs
	}
	pb.RegisterMeteoriteLandingsServiceServer(gs, &grpcService{s: s})
	reflection.Register(gs)
	s.health.SetServingStatus("MeteoriteLandingsService.MeteoriteLandingsService", healthpb.HealthCheckResponse_SERVING)
	return gs
}

// tap admits a large call (a list, a stream, an upload) before grpc-go
// starts a goroutine for it: it charges the call's own callOverhead to the
// memory budget, given back at the call's end (charge.go), and refuses the
// call at once, RESOURCE_EXHAUSTED, when the budget has no room or the
// calls already hold half of it (membudget.go). A tap runs
// on the connection's reader and must not wait; a refused upload is
// refused before grpc-go reads its message (up to MaxBody). Without this, 8
// connections of 1000 zero-window list calls each started 8000 handlers
// that then waited a second each for the budget, 25-30 KiB of memory
// apiece. Only the methods of the service served are charged: grpc-go
// ends a call of an unknown method without the End event that releases.
//
// A call without the token is not charged: the interceptor refuses it
// (Unauthenticated, uncounted) before it does anything. A refused call is
// counted as a request and an error, as the interceptor counts the calls
// it refuses.
func (s *Server) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	m, ok := s.chargedMethod(info.FullMethodName)
	if !ok {
		return ctx, nil
	}
	if s.token != nil && !s.grpcAuthorized(ctx) {
		return ctx, nil
	}
	if !s.mem.admitCall() {
		s.metrics.requests[protoGRPC][m].Inc()
		s.metrics.errors[protoGRPC][m].Inc()
		return ctx, grpcBusy(s.mem.busy())
	}
	return withTapCharge(ctx, s.mem), nil
}

// chargedMethod maps a full method name to its data method, and reports
// whether it is a large call of the service served, the calls that are
// charged to the budget: not a small or auxiliary call, nor one of a
// service not served (Unimplemented).
func (s *Server) chargedMethod(fullMethod string) (method, bool) {
	m := grpcMethod(fullMethod)
	switch m {
	case methodGetLargePayloadAsList, methodGetLargePayload, methodPostLargePayload,
		methodUploadStream, methodChat, methodFeed: // streams.go
	default:
		return m, false
	}
	return m, (s.payload != nil) == strings.HasPrefix(fullMethod, "/"+payload.ServiceName+"/")
}

// grpcServices are the prefixes of the full method names whose RPCs are
// the four data calls: the contract's service's, and the payload's
// (payload.go), which has the same methods.
var grpcServices = [...]string{"/" + pb.MeteoriteLandingsService_ServiceDesc.ServiceName + "/", "/" + payload.ServiceName + "/"}

// grpcMethod maps a full method name to its counter index, by the RPC's
// name (methodNames); noMethod for anything but the four data RPCs
// (health, reflection).
func grpcMethod(fullMethod string) method {
	for _, prefix := range grpcServices {
		if name, ok := strings.CutPrefix(fullMethod, prefix); ok {
			if i := slices.Index(methodNames[:], name); i >= 0 {
				return method(i)
			}
			break
		}
	}
	return noMethod
}

// grpcAuthorized checks metadata "authorization: Bearer <token>".
func (s *Server) grpcAuthorized(ctx context.Context) bool {
	return bearerIn(metadata.ValueFromIncomingContext(ctx, "authorization"), s.token)
}

// bearerIn reports whether one of vs is "Bearer <token>".
func bearerIn(vs []string, token []byte) bool {
	for _, v := range vs {
		if bearerMatches(v, token) {
			return true
		}
	}
	return false
}

// unaryInterceptor does, for unary calls, what the REST handler does around
// its routes: auth, counting, and turning a panic into codes.Internal.
func (s *Server) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	s.mem.begin() // membudget.go: no relief while calls come
	defer s.mem.end()
	if err := s.codec.check(req); err != nil { // codec.go
		return nil, err
	}
	m := grpcMethod(info.FullMethod)
	if m == noMethod {
		defer recoverGRPC(&err)
		return handler(ctx, req)
	}
	if s.token != nil && !s.grpcAuthorized(ctx) {
		return nil, errUnauthenticated
	}
	s.metrics.requests[protoGRPC][m].Inc()
	defer s.finishGRPC(m, &err)
	if s.panicHook != nil {
		s.panicHook()
	}
	// The call itself is charged by the tap; an upload's decoded records
	// are charged here (membudget.go).
	if c := chargeFrom(ctx); c != nil && c.in > 0 {
		n := c.in * decodeFactor
		if err := s.mem.acquire(ctx, n, budgetWait); err != nil {
			return nil, grpcBusy(err)
		}
		defer s.mem.release(n)
	}
	return handler(ctx, req)
}

// streamInterceptor is unaryInterceptor for streaming calls. Auxiliary
// streams (health Watch, reflection) end when the drain starts, so a client
// that keeps one open cannot hold up the shutdown.
func (s *Server) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	s.mem.begin()
	defer s.mem.end()
	ss = &checkedStream{ServerStream: ss, codec: s.codec} // codec.go
	m := grpcMethod(info.FullMethod)
	if m == noMethod {
		defer recoverGRPC(&err)
		ctx, cancel := context.WithCancel(ss.Context())
		defer cancel()
		stop := context.AfterFunc(s.drainCtx, cancel)
		defer stop()
		return handler(srv, &ctxStream{ServerStream: ss, ctx: ctx})
	}
	if s.token != nil && !s.grpcAuthorized(ss.Context()) {
		return errUnauthenticated
	}
	s.metrics.requests[protoGRPC][m].Inc()
	defer s.finishGRPC(m, &err)
	if s.panicHook != nil {
		s.panicHook()
	}
	return handler(srv, ss) // charged by the tap
}

// finishGRPC turns a panic into codes.Internal and counts errors.
func (s *Server) finishGRPC(m method, err *error) {
	if p := recover(); p != nil {
		*err = errInternal
	}
	if *err != nil {
		s.metrics.errors[protoGRPC][m].Inc()
	}
}

func recoverGRPC(err *error) {
	if p := recover(); p != nil {
		*err = errInternal
	}
}

// ctxStream replaces a stream's context.
type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (c *ctxStream) Context() context.Context { return c.ctx }

// grpcService implements the contract's service over the shared data.
type grpcService struct {
	pb.UnimplementedMeteoriteLandingsServiceServer
	s *Server
}

// GetVersion answers the small call.
func (g *grpcService) GetVersion(context.Context, *pb.EmptyRequest) (*pb.Version, error) {
	return g.s.version, nil
}

// GetLargePayloadAsList answers the 1000 records (or the number the
// meteorbench-records metadata asks for) in one message.
func (g *grpcService) GetLargePayloadAsList(ctx context.Context, _ *pb.EmptyRequest) (*pb.MeteoriteLandingList, error) {
	n, err := grpcRecords(ctx)
	if err != nil {
		return nil, err
	}
	if err := acquireCharge(ctx, laneList, int64(n)*estRecordBytes); err != nil {
		return nil, err
	}
	list, err := g.s.listMessage(n)
	if err != nil {
		return nil, errInternal
	}
	return list, nil
}

// GetLargePayload streams the 1000 records (or the number the
// meteorbench-records metadata asks for), one message each.
func (g *grpcService) GetLargePayload(_ *pb.EmptyRequest, stream grpc.ServerStreamingServer[pb.MeteoriteLanding]) error {
	n, err := grpcRecords(stream.Context())
	if err != nil {
		return err
	}
	_, msgs, err := g.s.records(n)
	if err != nil {
		return errInternal
	}
	ctx := stream.Context()
	budget := sendBudgetFrom(ctx)
	for i, m := range msgs {
		if err := acquireCharge(ctx, laneStream, estRecordBytes); err != nil {
			budget.refund(laneStream, min(int64(i)*estRecordBytes, streamRefund))
			return err
		}
		if err := stream.Send(m); err != nil {
			dropCharge(ctx)
			budget.refund(laneStream, min(int64(i)*estRecordBytes, streamRefund))
			return err
		}
	}
	return nil
}

// PostLargePayload converts every received record, then answers "SUCCESS".
// (A message that does not decode never gets here: the interceptor answers
// codes.InvalidArgument for it, codec.go.)
func (g *grpcService) PostLargePayload(_ context.Context, list *pb.MeteoriteLandingList) (*pb.StatusResponse, error) {
	if err := convertList(list); err != nil {
		return nil, status.Error(codes.InvalidArgument, boundEcho(err.Error()))
	}
	return g.s.success, nil
}
