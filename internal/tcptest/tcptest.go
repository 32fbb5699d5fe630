// Package tcptest serves TCP on loopback for tests.
package tcptest

import (
	"context"
	"net"
	"testing"
)

// Serve accepts on ln until the test ends (it closes ln then), handling
// each connection on its own goroutine and closing it after.
func Serve(tb testing.TB, ln net.Listener, handle func(net.Conn)) {
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
}

// Start listens on 127.0.0.1 and serves handle there as Serve does, until
// the test ends. It returns the bound address ("127.0.0.1:port").
func Start(tb testing.TB, handle func(net.Conn)) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("tcptest: listen: %v", err)
	}
	Serve(tb, ln, handle)
	return ln.Addr().String()
}

// Loopback listens on 127.0.0.1 and runs serve on the listener until the
// test ends; then it cancels serve's context and fails the test if serve
// returned an error. what names the server in those failures. It returns
// the bound address ("127.0.0.1:port").
func Loopback(tb testing.TB, what string, serve func(context.Context, net.Listener) error) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("%s: listen: %v", what, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("%s on %s: %v", what, ln.Addr(), err)
		}
	})
	return ln.Addr().String()
}
