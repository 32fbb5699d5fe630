// Package servertest starts a real meteorbench server for tests: one
// listener on 127.0.0.1, REST and gRPC on the same port, stopped (and its
// drain checked) when the test ends.
package servertest

import (
	"context"
	"net"
	"testing"

	"github.com/meteorbench/meteorbench/internal/server"
)

// Start serves cfg on 127.0.0.1:0 and returns the bound address
// ("127.0.0.1:port"). The server accepts connections as soon as Start returns.
// A t.Cleanup stops it gracefully and fails the test if the drain was not
// clean.
func Start(t testing.TB, cfg server.Config) (addr string) {
	t.Helper()
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("servertest: listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("servertest: server on %s: %v", ln.Addr(), err)
		}
	})
	return ln.Addr().String()
}
