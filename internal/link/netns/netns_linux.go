//go:build linux

package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Do runs fn on an OS thread that entered the namespace: sockets fn opens
// stay in it, whatever thread uses them later. The thread goes back to
// its namespace afterwards; if it cannot, it is not reused (it ends with
// its goroutine).
func (n *NS) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close()
		target, err := os.Open(filepath.Join(Dir, n.Name))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("network namespace %s: %w", n.Name, err)
			return
		}
		err = unix.Setns(int(target.Fd()), unix.CLONE_NEWNET)
		target.Close()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter network namespace %s: %w", n.Name, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("leave network namespace %s: %w", n.Name, err))
			return // still locked: the thread ends with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// OpenTUN makes a layer-3 TUN device named ifname in the namespace (no
// packet information header: each read is one IP packet) and returns its
// file, non-blocking so reads wait in Go's poller and Close ends them.
func (n *NS) OpenTUN(ifname string) (*os.File, error) {
	var f *os.File
	err := n.Do(func() error {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(ifname)
		if err == nil {
			ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
			err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
		}
		if err == nil {
			err = unix.SetNonblock(fd, true)
		}
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("TUN device %s: %w", ifname, err)
		}
		f = os.NewFile(uintptr(fd), "/dev/net/tun:"+ifname)
		// No IPv6 in these namespaces: no router solicitations or address
		// detection on the link, only the traffic a run sends.
		for _, conf := range []string{"all", "default", ifname} {
			os.WriteFile("/proc/sys/net/ipv6/conf/"+conf+"/disable_ipv6", []byte("1"), 0)
		}
		return nil
	})
	return f, err
}

// ControlCongestion is a net.Dialer or net.ListenConfig Control function
// that sets a TCP socket's congestion control to name (a listener's
// connections inherit it). It needs CAP_NET_ADMIN for an algorithm the
// host does not allow everyone (net.ipv4.tcp_allowed_congestion_control).
func ControlCongestion(name string) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		if !strings.HasPrefix(network, "tcp") {
			return nil
		}
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("TCP congestion control %s: %w", name, serr)
		}
		return nil
	}
}
