package server_test

// The server behind a real Caddy (Debian's caddy package), configured as a
// VPS user writes it: `reverse_proxy h2c://backend`, which keeps a pool of
// h2c connections to the backend and sends every request, REST and gRPC,
// over them.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/tcptest"
)

// countingListener counts the connections accepted.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// startCaddy runs caddy in the foreground in front of backend, h2c to it,
// and returns its address (plaintext: HTTP/1.1 and h2c).
func startCaddy(t *testing.T, backend string) string {
	t.Helper()
	bin := tool(t, "caddy", "Debian package caddy")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(conf, fmt.Appendf(nil, `{
	admin off
	auto_https off
	servers {
		protocols h1 h2 h2c
	}
}
http://%s {
	reverse_proxy h2c://%s
}
`, addr, backend), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "caddy.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", conf, "--adapter", "caddyfile")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		log.Close()
	})
	for deadline := time.Now().Add(hangGuard); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return addr
		}
		select {
		case err := <-exited:
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("caddy exited: %v\n%s", err, b)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("caddy not listening on %s after %v\n%s", addr, hangGuard, b)
		}
	}
}

// TestH2OneConnectionThroughCaddy: behind a real Caddy, REST and gRPC
// (data, health, reflection) all succeed whichever comes first, and Caddy
// sent them all over one pooled h2c connection to the server.
func TestH2OneConnectionThroughCaddy(t *testing.T) {
	for _, first := range []string{"REST", "gRPC"} {
		t.Run(first+" first", func(t *testing.T) {
			srv, err := server.New(server.Config{})
			if err != nil {
				t.Fatal(err)
			}
			var backend *countingListener
			addr := tcptest.Loopback(t, "server", func(ctx context.Context, ln net.Listener) error {
				backend = &countingListener{Listener: ln}
				return srv.Serve(ctx, backend)
			})
			proxy := startCaddy(t, addr)
			c := newClient(t, proxy, "") // REST over HTTP/1.1 and gRPC over h2c, both to Caddy
			ctx := c.ctx(t)

			rest := func() {
				t.Helper()
				resp, body := c.do(t, http.MethodGet, api.PathVersion, nil)
				if resp.StatusCode != http.StatusOK {
					t.Errorf("REST through Caddy: %s %q", resp.Status, body)
				}
			}
			grpcCalls := func() {
				t.Helper()
				if v, err := c.grpc.GetVersion(ctx, &pb.EmptyRequest{}); err != nil {
					t.Errorf("gRPC GetVersion through Caddy: %v", err)
				} else if v.GetApiVersion() == "" {
					t.Error("gRPC GetVersion through Caddy: empty answer")
				}
				if l, err := c.grpc.GetLargePayloadAsList(ctx, &pb.EmptyRequest{}); err != nil {
					t.Errorf("gRPC GetLargePayloadAsList through Caddy: %v", err)
				} else {
					checkProtoLandings(t, "gRPC list through Caddy", l.GetMeteoriteLandings())
				}
				h, err := healthpb.NewHealthClient(c.cc).Check(ctx, &healthpb.HealthCheckRequest{})
				if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
					t.Errorf("gRPC health through Caddy: %v %v", h.GetStatus(), err)
				}
				if names := listServices(t, ctx, c); !names[pb.MeteoriteLandingsService_ServiceDesc.ServiceName] {
					t.Errorf("gRPC reflection through Caddy: %v", names)
				}
			}
			if first == "REST" {
				rest()
				grpcCalls()
			} else {
				grpcCalls()
				rest()
			}
			grpcCalls()
			rest()
			if n := backend.n.Load(); n != 1 {
				t.Errorf("Caddy opened %d connections to the server, want its one pooled connection (the test means them to share one)", n)
			}
		})
	}
}
