package server_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

func TestCheck(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	if err := server.Check(ctx, servertest.Start(t, server.Config{Token: "t"})); err != nil {
		t.Errorf("a healthy server (with a token): %v", err)
	}

	// Nothing listening.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	if err := server.Check(ctx, closed); err == nil {
		t.Error("a closed port is healthy")
	}

	// An HTTP server that is not meteorbench.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"status":"ok"}`))
	}))
	defer other.Close()
	if err := server.Check(ctx, other.Listener.Addr().String()); err == nil {
		t.Error("a plain HTTP/1.1 server passes the gRPC half of the check")
	}

	if err := server.Check(ctx, "no-port"); err == nil {
		t.Error("a malformed address passes")
	}
}
