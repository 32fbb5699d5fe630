//go:build !linux

package netns

import (
	"errors"
	"os"
	"syscall"
)

var errNotLinux = errors.New("network namespaces and TUN devices are Linux's")

// Do is Linux's only.
func (n *NS) Do(fn func() error) error { return errNotLinux }

// OpenTUN is Linux's only.
func (n *NS) OpenTUN(ifname string) (*os.File, error) { return nil, errNotLinux }

// ControlCongestion is Linux's only: elsewhere it sets nothing.
func ControlCongestion(name string) func(network, address string, c syscall.RawConn) error {
	return func(string, string, syscall.RawConn) error { return nil }
}
