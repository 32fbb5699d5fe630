package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/server"
)

// TestMaxConns: with MaxConns 4, the test's own REST and gRPC connections
// and two more gRPC clients fill the server; a fifth connection is closed
// at once, unanswered, and counted; once a gRPC client leaves, a new REST
// connection is served. Connections of both protocols count.
func TestMaxConns(t *testing.T) {
	c := startClient(t, server.Config{MaxConns: 4})
	healthy := func() {
		t.Helper()
		if resp, body := c.do(t, http.MethodGet, api.PathHealth, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("/healthz: %s %s", resp.Status, body)
		}
		if _, err := c.grpc.GetVersion(c.ctx(t), &pb.EmptyRequest{}); err != nil {
			t.Fatalf("GetVersion: %v", err)
		}
	}
	healthy() // connections 1 (REST, kept alive) and 2 (gRPC)
	others := []*client{newClient(t, c.addr, ""), newClient(t, c.addr, "")}
	for _, o := range others { // connections 3 and 4
		if _, err := o.grpc.GetVersion(c.ctx(t), &pb.EmptyRequest{}); err != nil {
			t.Fatalf("GetVersion of another client: %v", err)
		}
	}

	conn := dialRaw(t, c.addr)
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", api.PathHealth)
	start := time.Now()
	if got := waitClosed(t, conn); len(got) > 0 {
		t.Errorf("a fifth connection got %.200q; want it closed unanswered", got)
	}
	t.Logf("a fifth connection was closed after %v", time.Since(start).Round(time.Microsecond))
	m := scrape(t, c)
	if m["meteorbench_connections_open{}"] != 4 || m["meteorbench_connections_limit{}"] != 4 || m["meteorbench_connections_shed_total{}"] != 1 {
		t.Errorf("metrics: open %v, limit %v, shed %v; want 4, 4, 1", m["meteorbench_connections_open{}"],
			m["meteorbench_connections_limit{}"], m["meteorbench_connections_shed_total{}"])
	}
	healthy() // the connections already open are still served

	others[0].cc.Close()
	// The server sees the gRPC connection close a moment later.
	deadline := time.Now().Add(hangGuard)
	for {
		conn := dialRaw(t, c.addr)
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", api.PathHealth)
		if got := waitClosed(t, conn); len(got) > 0 {
			t.Logf("a new connection once a gRPC client left: %.40q", got)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new connection served within %v of a gRPC client leaving", hangGuard)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := others[1].grpc.GetVersion(context.Background(), &pb.EmptyRequest{}); err != nil {
		t.Errorf("the remaining gRPC client: %v", err)
	}
}

// TestDefaultMaxConns: half the memory budget (a quarter of the limit) at
// 64 KiB a connection.
func TestDefaultMaxConns(t *testing.T) {
	for _, tc := range []struct {
		limit int64
		want  int
	}{{768 << 20, 1536}, {64 << 20, 128}, {1 << 30, 2048}} {
		if got := server.DefaultMaxConns(tc.limit); got != tc.want {
			t.Errorf("DefaultMaxConns(%d MiB) = %d, want %d", tc.limit>>20, got, tc.want)
		}
	}
}

// TestBudgetReturned: after large calls of every kind on both protocols,
// served, cancelled midway, past their deadline, or of a method not
// served, and once the gRPC client has left, the memory budget holds only
// the open connections' charges.
func TestBudgetReturned(t *testing.T) {
	c := startClient(t, server.Config{})
	for range 3 {
		if _, err := c.grpc.GetLargePayloadAsList(c.ctx(t), &pb.EmptyRequest{}); err != nil {
			t.Fatal(err)
		}
		st, err := c.grpc.GetLargePayload(c.ctx(t), &pb.EmptyRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := recvAll(st); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(c.ctx(t))
		st, err = c.grpc.GetLargePayload(ctx, &pb.EmptyRequest{})
		if err == nil {
			_, err = st.Recv()
		}
		cancel() // midway
		if err != nil {
			t.Fatal(err)
		}
		dctx, dcancel := context.WithTimeout(c.ctx(t), time.Microsecond)
		_, _ = c.grpc.GetLargePayloadAsList(dctx, &pb.EmptyRequest{})
		dcancel()
		if _, err := c.grpc.PostLargePayload(c.ctx(t), &pb.MeteoriteLandingList{}); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{api.PathList, api.PathStream} {
			if resp, body := c.do(t, http.MethodGet, path, nil); resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %s %.100s", path, resp.Status, body)
			}
		}
	}
	// A method of the payload service, not served here: Unimplemented
	// (without a deadline: a call with one is also released when its
	// context ends).
	err := c.cc.Invoke(context.Background(), "/meteorbench.payload.Payload/GetLargePayloadAsList", &pb.EmptyRequest{}, new(pb.MeteoriteLandingList))
	if st, _ := status.FromError(err); st.Code() != codes.Unimplemented {
		t.Errorf("a method not served: %v, want Unimplemented", err)
	}
	// Calls whose deadline (1 ns) has passed when grpc-go looks after the
	// tap: aborted without an End event.
	h := h2Dial(t, c.addr)
	for range 20 {
		if _, err := h.call(pb.MeteoriteLandingsService_GetLargePayloadAsList_FullMethodName, "grpc-timeout", "1n"); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.flush(); err != nil {
		t.Fatal(err)
	}
	defer h.readInBackground()()
	// The gRPC connection's send budget may keep a cancelled stream's
	// messages charged until the socket writes as many bytes again
	// (limits.go): closing the connection gives back all it holds.
	c.cc.Close()
	deadline := time.Now().Add(hangGuard)
	for {
		m := scrape(t, c)
		used, open := m["meteorbench_memory_budget_used_bytes{}"], m["meteorbench_connections_open{}"]
		if used == open*65536 {
			t.Logf("budget used %v B: %v open connections at 64 KiB", used, open)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("budget used %v B with %v connections open; want %v (their charges only)", used, open, open*65536)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
