package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

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
