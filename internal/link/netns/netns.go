// Package netns makes and removes the network namespaces of meteorbench's
// packet link, opens TUN devices in them, and runs code inside one: a
// socket opened by a thread that entered a namespace stays in it, so the
// load generator dials from one namespace and the server listens in the
// other while both stay in the host's namespace for everything else.
//
// Every namespace is named Prefix + the pid of the process that made it
// ("meteorbench-4242-server"): Sweep removes those whose process is gone
// (a run killed with SIGKILL), and Remove those of this process.
// Namespaces are made and removed with iproute2's ip (ip netns add/del),
// so `ip netns list` shows them, and addresses set with ip -n.
package netns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Prefix starts the name of every namespace meteorbench makes.
const Prefix = "meteorbench-"

// Dir is where iproute2 keeps its named namespaces.
const Dir = "/run/netns"

// Available reports why namespaces and TUN devices cannot be used here
// (nil when they can): not root, no /dev/net/tun, no ip command.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("not root (network namespaces need CAP_SYS_ADMIN)")
	}
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("no TUN device: %w", err)
	}
	f.Close()
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("no ip command (Debian package iproute2)")
	}
	return nil
}

// NS is a named network namespace.
type NS struct{ Name string }

// Name is the namespace name of this process for role: Prefix, the pid
// and role ("meteorbench-4242-server").
func Name(role string) string {
	return Prefix + strconv.Itoa(os.Getpid()) + "-" + role
}

// Create makes the namespace name (ip netns add) with its loopback up.
func Create(name string) (*NS, error) {
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ip netns add %s: %s", name, strings.TrimSpace(string(out)))
	}
	n := &NS{Name: name}
	if err := n.IP("link", "set", "lo", "up"); err != nil {
		n.Remove()
		return nil, err
	}
	return n, nil
}

// Open is the existing namespace name, for a process that did not make it
// (serve --netns).
func Open(name string) (*NS, error) {
	if !strings.HasPrefix(name, Prefix) || strings.ContainsAny(name, "/\x00") {
		return nil, fmt.Errorf("%q: not a meteorbench namespace (%s...)", name, Prefix)
	}
	if _, err := os.Stat(filepath.Join(Dir, name)); err != nil {
		return nil, fmt.Errorf("network namespace %s: %w", name, err)
	}
	return &NS{Name: name}, nil
}

// IP runs `ip -n NAME args...`.
func (n *NS) IP(args ...string) error {
	out, err := exec.Command("ip", append([]string{"-n", n.Name}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip -n %s %s: %s", n.Name, strings.Join(args, " "), strings.TrimSpace(string(out)))
	}
	return nil
}

// Remove deletes the namespace (ip netns del); what runs in it loses its
// interfaces.
func (n *NS) Remove() error {
	if out, err := exec.Command("ip", "netns", "del", n.Name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns del %s: %s", n.Name, strings.TrimSpace(string(out)))
	}
	return nil
}

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

// Sweep removes the namespaces named with Prefix whose process is gone
// (killed before it could remove them) and returns their names.
func Sweep() ([]string, error) {
	entries, err := os.ReadDir(Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		pid, ok := pidOf(e.Name())
		if !ok || alive(pid) {
			continue
		}
		if err := (&NS{Name: e.Name()}).Remove(); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}

// pidOf is the pid in a namespace name made by Name.
func pidOf(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return 0, false
	}
	digits, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(digits)
	return pid, err == nil && pid > 0
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
