// Package servertest starts a real meteorbench server for tests: one
// listener on 127.0.0.1, REST and gRPC on the same port, stopped (and its
// drain checked) when the test ends.
package servertest

import (
	"testing"

	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/tcptest"
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
	return tcptest.Loopback(t, "servertest: server", srv.Serve)
}
