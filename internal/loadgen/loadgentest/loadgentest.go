// Package loadgentest starts a small server that speaks the contract (REST
// JSON, protobuf over HTTP/1.1 and gRPC on one port, split with cmux) and
// can be told to misbehave: answer a wrong version, too few records, an
// HTTP status or a gRPC code, or stall in a handler until the test lets it
// go. It exists to test the load generator's validation, error classes and
// open-loop correction against real sockets; the real server is tested
// with internal/server/servertest.
package loadgentest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soheilhy/cmux"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
)

// Config says how the server misbehaves. The zero value answers correctly.
type Config struct {
	// Version is the small call's answer; "" means data.Version.
	Version string
	// WrongEvery, when > 0, makes every WrongEvery-th data call (numbered
	// as Hook's) of the small scenario answer a wrong version.
	WrongEvery int64
	// Records is how many records large and stream deliver; 0 means all.
	Records int
	// Status, when non-zero, is the HTTP status every REST data route
	// answers (with a {"error": ...} body).
	Status int
	// Code, when non-zero, is the gRPC code every data method fails with.
	Code codes.Code
	// Hook, when set, runs at the start of every data call (REST and gRPC)
	// with the call's number (1-based, counted across protocols). A test
	// stalls the server by blocking in it.
	Hook func(ctx context.Context, n int64)
	// Slots and ServiceTime, when both set, make a server of known
	// capacity, Slots/ServiceTime calls/s: every data call (after the hook)
	// waits, first come first served, for the earliest of Slots servers
	// and keeps it for ServiceTime. Service is kept in virtual time (each
	// call ends ServiceTime after the previous one on its slot ended, or
	// after it arrived when the slot was idle), so timer overshoot adds to
	// a call's latency but never lowers the capacity.
	Slots       int
	ServiceTime time.Duration
	// FixedCPU, in [0, 1), makes the known cost a fixed share of the CPUs
	// busy whatever the load (a real server's wake-ups, timers, runtime)
	// plus a cost per call: the counter reads FixedCPU × Slots × seconds
	// since the start plus (1 - FixedCPU) × ServiceTime per call, so the
	// CPUs are exactly full at Capacity, while a cost per call taken at a
	// light load (and scaled in proportion) predicts saturation too early.
	FixedCPU float64
}

// Capacity is the calls/s a server with Slots and ServiceTime sustains
// (0: unbounded).
func (c Config) Capacity() float64 {
	if c.Slots <= 0 || c.ServiceTime <= 0 {
		return 0
	}
	return float64(c.Slots) / c.ServiceTime.Seconds()
}

// Server is a running test server.
type Server struct {
	// Addr is the bound address, "127.0.0.1:port".
	Addr string
	// Calls counts the data calls that reached a handler.
	Calls atomic.Int64

	cfg       Config
	slotMu    sync.Mutex
	slotFree  []time.Time // when each slot's last call ends
	ln        net.Listener
	grpcSrv   *grpc.Server
	httpSrv   *http.Server
	closeOnce sync.Once
	done      chan struct{}
	started   time.Time
}

// Start serves cfg on 127.0.0.1:0 until the test ends (or Close).
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("loadgentest: listen: %v", err)
	}
	s := &Server{Addr: ln.Addr().String(), cfg: cfg, ln: ln, done: make(chan struct{}), started: time.Now()}
	if cfg.Capacity() > 0 {
		s.slotFree = make([]time.Time, cfg.Slots)
	}
	s.grpcSrv = grpc.NewServer()
	pb.RegisterMeteoriteLandingsServiceServer(s.grpcSrv, &grpcService{s: s})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}`))
	})
	if cfg.Capacity() > 0 {
		mux.HandleFunc("GET /metrics", s.metrics)
	}
	mux.HandleFunc("GET /api/MeteoriteLandings", s.rest(s.hVersion))
	mux.HandleFunc("GET /api/MeteoriteLandings/LargePayload", s.rest(s.hLarge))
	mux.HandleFunc("GET /api/MeteoriteLandings/LargePayload/stream", s.rest(s.hStream))
	mux.HandleFunc("POST /api/MeteoriteLandings/LargePayload", s.rest(s.hPost))
	s.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}

	m := cmux.New(ln)
	m.SetReadTimeout(5 * time.Second)
	m.HandleError(func(error) bool { return true })
	grpcL := m.Match(cmux.HTTP2())
	httpL := m.Match(cmux.Any())
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); s.grpcSrv.Serve(grpcL) }()
	go func() { defer wg.Done(); s.httpSrv.Serve(httpL) }()
	go func() { defer wg.Done(); m.Serve() }()
	go func() { wg.Wait(); close(s.done) }()
	t.Cleanup(s.Close)
	return s
}

// Close stops the server at once: open connections are cut and new ones
// refused, as when a server process dies.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.ln.Close()
		s.httpSrv.Close()
		s.grpcSrv.Stop()
		<-s.done
	})
}

func (s *Server) version(ctx context.Context) string {
	if n, _ := ctx.Value(callNumber{}).(int64); s.cfg.WrongEvery > 0 && n%s.cfg.WrongEvery == 0 {
		return "API Version 0.9"
	}
	if s.cfg.Version != "" {
		return s.cfg.Version
	}
	return data.Version
}

func (s *Server) landings() []data.Landing {
	ls := data.MustLandings()
	if s.cfg.Records > 0 && s.cfg.Records < len(ls) {
		ls = ls[:s.cfg.Records]
	}
	return ls
}

// callNumber is the context key of a data call's number.
type callNumber struct{}

// enter counts a data call and runs the hook. It returns the context's
// error when the call ended (deadline, cancellation) while the hook held it,
// and the context with the call's number (callNumber).
func (s *Server) enter(ctx context.Context) (context.Context, error) {
	n := s.Calls.Add(1)
	ctx = context.WithValue(ctx, callNumber{}, n)
	if s.cfg.Hook != nil {
		s.cfg.Hook(ctx, n)
	}
	if s.slotFree != nil {
		s.serve(ctx)
	}
	return ctx, ctx.Err()
}

// serve queues a call for the earliest free slot and holds it for the
// service time (see Config.Slots).
func (s *Server) serve(ctx context.Context) {
	s.slotMu.Lock()
	now := time.Now()
	best := 0
	for i, t := range s.slotFree {
		if t.Before(s.slotFree[best]) {
			best = i
		}
	}
	end := s.slotFree[best]
	if end.Before(now) {
		end = now
	}
	end = end.Add(s.cfg.ServiceTime)
	s.slotFree[best] = end
	s.slotMu.Unlock()
	t := time.NewTimer(time.Until(end))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// metrics serves, for a server of known capacity, the CPU counter and the
// CPUs of a server of known cost: each data call costs ServiceTime of CPU
// on one of Slots CPUs (the counter counts the calls that entered at
// ServiceTime each, whatever the test process itself spends).
func (s *Server) metrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	f := s.cfg.FixedCPU
	cpu := float64(s.Calls.Load())*s.cfg.ServiceTime.Seconds()*(1-f) + f*float64(s.cfg.Slots)*time.Since(s.started).Seconds()
	fmt.Fprintf(w, "# TYPE %s counter\n%s %g\n", api.MetricCPU, api.MetricCPU, cpu)
	fmt.Fprintf(w, "# TYPE go_sched_gomaxprocs_threads gauge\ngo_sched_gomaxprocs_threads %d\n", s.cfg.Slots)
}

// rest wraps a REST data handler with counting, the hook and the status fault.
func (s *Server) rest(h func(w http.ResponseWriter, r *http.Request, protobuf bool)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, err := s.enter(r.Context())
		if err != nil {
			return // the client is gone
		}
		r = r.WithContext(ctx)
		if s.cfg.Status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(s.cfg.Status)
			w.Write([]byte(`{"error":"injected fault"}`))
			return
		}
		h(w, r, r.Header.Get("Accept") == api.TypeProtobuf)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func writeProto(w http.ResponseWriter, m proto.Message) {
	b, _ := proto.Marshal(m)
	w.Header().Set("Content-Type", api.TypeProtobuf)
	w.Write(b)
}

func (s *Server) hVersion(w http.ResponseWriter, r *http.Request, protobuf bool) {
	if protobuf {
		writeProto(w, &pb.Version{ApiVersion: s.version(r.Context())})
		return
	}
	writeJSON(w, s.version(r.Context()))
}

func (s *Server) hLarge(w http.ResponseWriter, _ *http.Request, protobuf bool) {
	if protobuf {
		writeProto(w, data.ProtoList(s.landings()))
		return
	}
	writeJSON(w, s.landings())
}

func (s *Server) hStream(w http.ResponseWriter, _ *http.Request, protobuf bool) {
	f, _ := w.(http.Flusher)
	if protobuf {
		w.Header().Set("Content-Type", api.TypeProtobuf)
	} else {
		w.Header().Set("Content-Type", "application/x-ndjson")
	}
	enc := json.NewEncoder(w)
	for i, l := range s.landings() {
		if protobuf {
			protodelim.MarshalTo(w, l.Proto())
		} else {
			enc.Encode(&l)
		}
		if i == 0 && f != nil {
			f.Flush()
		}
	}
}

func (s *Server) hPost(w http.ResponseWriter, r *http.Request, protobuf bool) {
	if protobuf {
		var list pb.MeteoriteLandingList
		b, err := io.ReadAll(r.Body)
		if err != nil || proto.Unmarshal(b, &list) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		writeProto(w, &pb.StatusResponse{Status: data.Success})
		return
	}
	var ls []data.Landing
	if err := json.NewDecoder(r.Body).Decode(&ls); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	writeJSON(w, data.Success)
}

// grpcService is the gRPC side, with the same faults.
type grpcService struct {
	pb.UnimplementedMeteoriteLandingsServiceServer
	s *Server
}

func (g *grpcService) fault(ctx context.Context) (context.Context, error) {
	ctx, err := g.s.enter(ctx)
	if err != nil {
		return ctx, status.FromContextError(err).Err()
	}
	if g.s.cfg.Code != codes.OK {
		return ctx, status.Error(g.s.cfg.Code, "injected fault")
	}
	return ctx, nil
}

func (g *grpcService) GetVersion(ctx context.Context, _ *pb.EmptyRequest) (*pb.Version, error) {
	ctx, err := g.fault(ctx)
	if err != nil {
		return nil, err
	}
	return &pb.Version{ApiVersion: g.s.version(ctx)}, nil
}

func (g *grpcService) GetLargePayloadAsList(ctx context.Context, _ *pb.EmptyRequest) (*pb.MeteoriteLandingList, error) {
	if _, err := g.fault(ctx); err != nil {
		return nil, err
	}
	return data.ProtoList(g.s.landings()), nil
}

func (g *grpcService) GetLargePayload(_ *pb.EmptyRequest, st grpc.ServerStreamingServer[pb.MeteoriteLanding]) error {
	if _, err := g.fault(st.Context()); err != nil {
		return err
	}
	for _, l := range g.s.landings() {
		if err := st.Send(l.Proto()); err != nil {
			return err
		}
	}
	return nil
}

func (g *grpcService) PostLargePayload(ctx context.Context, list *pb.MeteoriteLandingList) (*pb.StatusResponse, error) {
	if _, err := g.fault(ctx); err != nil {
		return nil, err
	}
	if len(list.GetMeteoriteLandings()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "no records")
	}
	return &pb.StatusResponse{Status: data.Success}, nil
}
