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
	"strconv"
	"strings"
	"syscall"
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
