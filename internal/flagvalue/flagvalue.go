// Package flagvalue holds the flag values the commands share, each checked
// when its flag is parsed (pflag.Value), so that a bad one is a usage error
// (exit 2) before any work: host:port, CPU lists, sizes in bytes, log
// levels.
package flagvalue

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/internal/cpuset"
	"github.com/meteorbench/meteorbench/internal/target"
)

// HostPort is a host:port flag value (serve's and health's --addr), checked
// when the flag is parsed so that a bad one is a usage error (exit 2)
// rather than a failed listen or dial: the port must be a number from
// MinPort to 65535, the host empty, an IP address or a host name.
type HostPort struct {
	Addr    string
	MinPort uint64 // 0 to listen (a free port), 1 to dial
}

func (a *HostPort) String() string { return a.Addr }

func (a *HostPort) Set(s string) error {
	if err := CheckHostPort(s, a.MinPort); err != nil {
		return err
	}
	a.Addr = s
	return nil
}

func (*HostPort) Type() string { return "host:port" }

// CPUs is a CPU list flag value (serve --cpus), parsed when the flag is,
// so that a malformed one is a usage error (exit 2).
type CPUs struct{ List cpuset.Set }

func (c *CPUs) String() string { return c.List.String() }

func (c *CPUs) Set(s string) error { return parseInto(&c.List, s, cpuset.Parse) }

func (*CPUs) Type() string { return "list" }

// parseInto is a flag value's Set: s parsed by parse into *dst, which an
// error leaves as it was.
func parseInto[T any](dst *T, s string, parse func(string) (T, error)) error {
	v, err := parse(s)
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// CheckHostPort validates host:port; the port must be at least minPort.
func CheckHostPort(s string, minPort uint64) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", s, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p < minPort {
		return fmt.Errorf("%q: port %q is not a number from %d to 65535", s, port, minPort)
	}
	if host == "" {
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if len(host) > 253 || strings.Trim(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") != "" ||
		strings.HasPrefix(host, "-") || strings.HasPrefix(host, ".") || strings.Contains(host, "..") {
		return fmt.Errorf("%q: host %q is not an IP address or a host name", s, host)
	}
	return nil
}

// ParseLevel reads a log level (serve --log-level).
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
}

// ByteSize is a flag value in bytes that accepts IEC (KiB, MiB, GiB) and
// SI (KB, MB, GB) suffixes.
type ByteSize int64

func (b *ByteSize) String() string {
	v := int64(*b)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if v >= u.n && v%u.n == 0 {
			return strconv.FormatInt(v/u.n, 10) + u.suffix
		}
	}
	return strconv.FormatInt(v, 10)
}

func (b *ByteSize) Set(s string) error {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range []struct {
		suffix string
		n      int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
	} {
		if strings.HasSuffix(strings.ToUpper(num), strings.ToUpper(u.suffix)) {
			num, mult = strings.TrimSpace(num[:len(num)-len(u.suffix)]), u.n
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return fmt.Errorf("%q is not a positive size in bytes (e.g. 8MiB, 512KiB, 1048576)", s)
	}
	*b = ByteSize(n * mult)
	return nil
}

func (*ByteSize) Type() string { return "size" }

// Targets is --target: one host:port for every protocol, or
// rest=HOST:PORT,grpc=HOST:PORT (target.ParseTargets), checked when the
// flag is parsed.
type Targets struct{ T target.Targets }

func (t *Targets) String() string { return t.T.String() }

func (t *Targets) Set(s string) error {
	return parseInto(&t.T, s, func(s string) (target.Targets, error) {
		return target.ParseTargets(s, func(a string) error { return CheckHostPort(a, 1) })
	})
}

func (*Targets) Type() string { return "host:port|rest=host:port,grpc=host:port" }

// PIDs is --server-pid: one process id, or rest=PID,grpc=PID.
type PIDs struct{ P target.PIDs }

func (p *PIDs) String() string { return p.P.String() }

func (p *PIDs) Set(s string) error { return parseInto(&p.P, s, target.ParsePIDs) }

func (*PIDs) Type() string { return "pid[+pid]|rest=pid,grpc=pid" }
