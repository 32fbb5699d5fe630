package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/server"
)

// smallBufListener shrinks the send buffer of every accepted connection, so
// a large response cannot disappear into kernel buffers: its handler stays
// in flight until the client reads.
type smallBufListener struct{ net.Listener }

func (l smallBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// served is a Serve running in the background.
type served struct {
	addr     string
	shutdown context.CancelFunc // starts the drain
	finished chan struct{}      // closed when Serve has returned
	err      error              // Serve's result, once finished is closed
}

// startServe runs Serve on a fresh loopback listener (wrapped by wrap, if
// not nil).
func startServe(t *testing.T, cfg server.Config, wrap func(net.Listener) net.Listener) *served {
	t.Helper()
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &served{addr: ln.Addr().String(), finished: make(chan struct{})}
	if wrap != nil {
		ln = wrap(ln)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.shutdown = cancel
	go func() {
		s.err = srv.Serve(ctx, ln)
		close(s.finished)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.finished:
		case <-time.After(hangGuard):
			t.Error("Serve did not return")
		}
	})
	return s
}

// wait waits for Serve to return and gives its result.
func (s *served) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-s.finished:
		return s.err
	case <-time.After(hangGuard):
		t.Fatal("Serve did not return")
		return nil
	}
}

// waitRefused dials until the port refuses connections.
func waitRefused(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		c, err := net.Dial("tcp", addr)
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			return
		case err == nil:
			c.Close()
		case !errors.Is(err, syscall.ECONNRESET): // reset: it was in the backlog as the listener closed
			t.Fatalf("dial after shutdown: %v, want connection refused", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the port still accepts connections after shutdown started")
}

// slowStream opens a GetLargePayload stream on a connection of its own with
// a static 64 KiB window (no BDP growth), so the server's Send blocks until
// this client reads, and returns it with its first message. The connection
// closes when the test ends.
func slowStream(t *testing.T, addr string) (pb.MeteoriteLandingsService_GetLargePayloadClient, *pb.MeteoriteLanding) {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	stream, err := pb.NewMeteoriteLandingsServiceClient(cc).GetLargePayload(ctx, &pb.EmptyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	m0, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return stream, m0
}

// TestGracefulShutdown: a slow REST download and a slow gRPC stream, both in
// flight when the drain starts, complete in full; new connections are
// refused; an idle gRPC connection cannot start new calls; Serve returns nil.
func TestGracefulShutdown(t *testing.T) {
	s := startServe(t, server.Config{}, func(l net.Listener) net.Listener { return smallBufListener{l} })
	addr := s.addr

	// REST: a connection with a small receive buffer and a client that
	// reads ahead 1 KiB at most; read the headers and a little of the
	// body, then stop reading.
	d := net.Dialer{Timeout: hangGuard, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
		return errors.Join(err, serr)
	}}
	tr := &http.Transport{DialContext: d.DialContext, ReadBufferSize: 1024, DisableCompression: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: hangGuard}).Get("http://" + addr + api.PathList)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET list: %s", resp.Status)
	}
	first := make([]byte, 1000)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}

	// gRPC: a stream whose server Send blocks until this client reads.
	stream, m0 := slowStream(t, addr)

	// An idle gRPC connection, ready before the drain.
	idle := newClient(t, addr, "")
	if _, err := idle.grpc.GetVersion(idle.ctx(t), &pb.EmptyRequest{}); err != nil {
		t.Fatal(err)
	}

	if st := idle.cc.GetState(); st != connectivity.Ready {
		t.Fatalf("idle client: %v, want READY", st)
	}

	s.shutdown()
	waitRefused(t, addr)
	// The idle connection hears GOAWAY and leaves READY.
	if !idle.cc.WaitForStateChange(idle.ctx(t), connectivity.Ready) {
		t.Fatal("the idle gRPC connection stayed READY during the drain")
	}
	select {
	case <-s.finished:
		t.Fatalf("Serve returned (%v) with two responses still in flight", s.err)
	default:
	}
	if _, err := idle.grpc.GetVersion(idle.ctx(t), &pb.EmptyRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("a new call on an idle connection during the drain: %v, want Unavailable", err)
	}

	// Now read both in full.
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the rest of the REST body after shutdown started: %v", err)
	}
	checkJSONLandings(t, "REST download across shutdown", append(first, rest...))

	ms, err := recvAll(stream)
	ms = append([]*pb.MeteoriteLanding{m0}, ms...)
	if err != nil {
		t.Fatalf("gRPC stream after shutdown started, message %d: %v", len(ms)+1, err)
	}
	checkProtoLandings(t, "gRPC stream across shutdown", ms)

	if err := s.wait(t); err != nil {
		t.Fatalf("Serve = %v, want nil after a clean drain", err)
	}
}

// TestShutdownDeadline: a client that never reads cannot hold the server
// past its shutdown timeout; Serve says so.
func TestShutdownDeadline(t *testing.T) {
	s := startServe(t, server.Config{ShutdownTimeout: 300 * time.Millisecond}, nil)
	slowStream(t, s.addr)
	s.shutdown() // and never read again
	err := s.wait(t)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Serve = %v, want a drain deadline error", err)
	}
}

// TestShutdownWithOpenHealthWatch: a health Watch stream (long-lived by
// design) sees NOT_SERVING and ends; it does not hold the drain open.
func TestShutdownWithOpenHealthWatch(t *testing.T) {
	s := startServe(t, server.Config{}, nil)
	addr := s.addr
	c := newClient(t, addr, "")
	w, err := healthpb.NewHealthClient(c.cc).Watch(c.ctx(t), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := w.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Watch: %v, %v", r, err)
	}
	s.shutdown()
	for {
		r, err := w.Recv()
		if err != nil {
			break // the stream ended
		}
		if r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("Watch during the drain: %v", r.GetStatus())
		}
	}
	if err := s.wait(t); err != nil {
		t.Fatalf("Serve = %v, want nil", err)
	}
}

// TestServeLifecycle: cancelled before any client, Serve returns nil; a
// second Serve is refused.
func TestServeLifecycle(t *testing.T) {
	srv, err := server.New(server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := srv.Serve(ctx, ln); err != nil {
		t.Fatalf("Serve with a done context = %v, want nil", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener is still open after Serve returned")
	}
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()
	if err := srv.Serve(context.Background(), ln2); err == nil {
		t.Fatal("a second Serve succeeded")
	}
}

// TestServeListenerClosedUnderIt: if the listener fails, Serve stops and
// says why instead of hanging.
func TestServeListenerClosedUnderIt(t *testing.T) {
	var ln net.Listener
	s := startServe(t, server.Config{}, func(l net.Listener) net.Listener { ln = l; return l })
	healthy(t, newClient(t, s.addr, ""))
	ln.Close()
	if err := s.wait(t); err == nil {
		t.Fatal("Serve = nil after its listener was closed under it, want an error")
	}
}
