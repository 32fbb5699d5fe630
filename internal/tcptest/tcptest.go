// Package tcptest serves TCP connections for tests.
package tcptest

import (
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
