package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/meteorbench/meteorbench/internal/cpuset"
	"github.com/meteorbench/meteorbench/internal/output"
	"github.com/meteorbench/meteorbench/internal/server"
)

// tokenEnv names the environment variable that supplies --token's default
// (safer than the flag, which other users can read in the process list).
const tokenEnv = "METEORBENCH_TOKEN"

// addrEnv supplies the default of --addr for both serve and health, so a
// container's HEALTHCHECK follows an address changed with -e.
const addrEnv = "METEORBENCH_ADDR"

// addrFileEnv supplies the default of --addr-file for both serve and
// health: serve writes the address it bound there, health reads it, so the
// HEALTHCHECK also follows "serve --addr :9000" given on the command line.
const addrFileEnv = "METEORBENCH_ADDR_FILE"

// defaultServeAddr is --addr's default when $METEORBENCH_ADDR is not set.
const defaultServeAddr = ":8080"

func newServeCmd() *cobra.Command {
	var (
		addr     = hostPort{defaultServeAddr, 0} // port 0 picks a free one
		addrFile string
		logLevel string
		maxBody  = serveByteSize(server.DefaultMaxBody)
		memLimit serveByteSize // 0: server.DefaultMemoryLimit
		cpus     cpusFlag
		cfg      server.Config
		tlsFlags serveTLSFlags // servetls.go
		payload  payloadFlags  // payload.go
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve REST (HTTP/1.1) and gRPC (HTTP/2) on one port",
		Long: `Serve the 1000 meteorite landings on ONE port: REST with JSON or protobuf
bodies over HTTP/1.1, and gRPC (with health and reflection) over HTTP/2.

REST:  GET  /api/MeteoriteLandings                      the version string
       GET  /api/MeteoriteLandings/LargePayload         the 1000 records
       POST /api/MeteoriteLandings/LargePayload         upload records -> "SUCCESS"
       GET  /api/MeteoriteLandings/LargePayload/stream  NDJSON, one record a line
       GET  /healthz, GET /metrics (Prometheus)
       Send "Accept: application/x-protobuf" (and, to POST, "Content-Type:
       application/x-protobuf") for protobuf bodies.
gRPC:  MeteoriteLandingsService.MeteoriteLandingsService, grpc.health.v1,
       server reflection.
--payload FILE serves a JSON sample of your own data on the same routes
instead, and on gRPC as meteorbench.payload.Payload ('meteorbench schema FILE').

Prints one line on stderr once listening, then logs nothing per request.
--cpus pins the whole process (every thread) to those CPUs and sets
GOMAXPROCS to their number before serving; the start-up line then says so.
SIGINT or SIGTERM drains in-flight calls (within --shutdown-timeout) and exits 0.`,
		Args: serveNoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			level, err := serveParseLevel(logLevel)
			if err != nil {
				return usageError{err}
			}
			if err := addrFromEnv(cmd, &addr); err != nil {
				return usageError{err}
			}
			if !cmd.Flags().Changed("addr-file") {
				addrFile = os.Getenv(addrFileEnv)
			}
			if !cmd.Flags().Changed("token") {
				cfg.Token = os.Getenv(tokenEnv)
			}
			if err := tlsFlags.check(); err != nil {
				return usageError{err}
			}
			cfg.MaxBody = int64(maxBody)
			memSource := "--memory-limit"
			if cfg.MemoryLimit = int64(memLimit); cfg.MemoryLimit == 0 {
				cfg.MemoryLimit, memSource = server.DefaultMemoryLimit()
			}
			cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			// Pin first, so every thread started from here on inherits the mask.
			pinned := ""
			if cpus.set.Len() > 0 {
				if err := pinCPUs(cpus.set); err != nil {
					return err
				}
				pinned = fmt.Sprintf(", pinned to CPUs %s (GOMAXPROCS %d)", cpus.set, runtime.GOMAXPROCS(0))
			}
			host, _, _ := net.SplitHostPort(addr.addr)
			if err := tlsFlags.apply(&cfg, host, cmd.ErrOrStderr()); err != nil {
				return err
			}
			if cfg.Payload, err = payload.load(cmd.ErrOrStderr()); err != nil {
				return err
			}
			srv, err := server.New(cfg)
			if err != nil {
				return err
			}
			if cfg.MemoryLimit > 0 {
				// The runtime collects harder and returns memory to the
				// system as the heap nears the limit (after a burst).
				debug.SetMemoryLimit(cfg.MemoryLimit)
			}
			var lc net.ListenConfig
			ln, err := lc.Listen(cmd.Context(), "tcp", addr.addr)
			if err != nil {
				return err
			}

			// The address file is a convenience for health, written before
			// the start-up line so it is there once that line is: a read-only
			// file system costs a warning, not the server.
			var fileErr error
			if addrFile != "" {
				content := ln.Addr().String()
				if cfg.TLS != nil {
					content += " tls" // health checks it over TLS
				}
				if fileErr = writeAddrFile(addrFile, content); fileErr == nil {
					defer os.Remove(addrFile)
				}
			}
			// The one start-up line; `run` reads the address after "listening on ".
			fmt.Fprintf(cmd.ErrOrStderr(), "meteorbench serve: listening on %s (REST over HTTP/1.1 and gRPC over HTTP/2%s)%s\n", ln.Addr(), tlsNote(cfg), pinned)
			tokenWarning(cfg, ln.Addr(), cfg.Logger)
			if fileErr != nil {
				cfg.Logger.Warn("health --addr-file will not find this server", "err", fileErr)
			}
			cfg.Logger.Debug("configuration", "max_body", cfg.MaxBody, "token", cfg.Token != "",
				"header_timeout", cfg.HeaderTimeout, "read_timeout", cfg.ReadTimeout,
				"write_timeout", cfg.WriteTimeout, "idle_timeout", cfg.IdleTimeout,
				"shutdown_timeout", cfg.ShutdownTimeout, "max_streams", cfg.MaxConcurrentStreams,
				"memory_limit", cfg.MemoryLimit, "memory_limit_from", memSource)
			return srv.Serve(cmd.Context(), ln)
		},
	}
	f := cmd.Flags()
	f.Var(&addr, "addr", "`host:port` to listen on (port 0 picks a free one); default $"+addrEnv+", else "+defaultServeAddr)
	f.StringVar(&addrFile, "addr-file", "", "write the bound host:port to this `file` (for health --addr-file), removed at exit; default $"+addrFileEnv)
	f.StringVar(&cfg.Token, "token", "", "require this bearer `token` on the data calls (REST Authorization header, gRPC authorization metadata); default $"+tokenEnv)
	f.Var(&maxBody, "max-body", "largest request body / gRPC message (e.g. 8MiB, 512KiB, 1048576)")
	f.Var(&memLimit, "memory-limit", "memory the server may use (e.g. 512MiB): a quarter of it bounds, across all connections, the answers queued for clients and request bodies being read (over it, large calls get 503 / RESOURCE_EXHAUSTED); also Go's soft memory limit. Default: 3/4 of the cgroup's memory limit, else 1/2 of physical memory")
	f.Uint32Var(&cfg.MaxConcurrentStreams, "max-streams", server.DefaultMaxConcurrentStreams, "concurrent gRPC calls allowed per connection")
	f.DurationVar(&cfg.HeaderTimeout, "header-timeout", server.DefaultHeaderTimeout, "time a new connection gets to identify its protocol and send its headers")
	f.DurationVar(&cfg.ReadTimeout, "read-timeout", server.DefaultReadTimeout, "time to read one whole HTTP/1.1 request")
	f.DurationVar(&cfg.WriteTimeout, "write-timeout", server.DefaultWriteTimeout, "time to write one HTTP/1.1 response")
	f.DurationVar(&cfg.IdleTimeout, "idle-timeout", server.DefaultIdleTimeout, "close connections idle this long (both protocols)")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "time in-flight calls get to finish after SIGINT/SIGTERM")
	f.Var(&cpus, "cpus", "pin the server to these CPUs, a Linux CPU `list` such as 0, 0-1 or 0,2-3 (GOMAXPROCS becomes their number); default: unpinned")
	tlsFlags.register(f)
	payload.register(f)
	f.StringVar(&logLevel, "log-level", "info", "stderr log level: debug|info|warn|error (nothing is logged per request)")
	return cmd
}

// hostPort is a host:port flag value (serve's and health's --addr), checked
// when the flag is parsed so that a bad one is a usage error (exit 2)
// rather than a failed listen or dial: the port must be a number from
// minPort to 65535, the host empty, an IP address or a host name.
type hostPort struct {
	addr    string
	minPort uint64 // 0 to listen (a free port), 1 to dial
}

func (a *hostPort) String() string { return a.addr }

func (a *hostPort) Set(s string) error {
	if err := checkHostPort(s, a.minPort); err != nil {
		return err
	}
	a.addr = s
	return nil
}

func (*hostPort) Type() string { return "host:port" }

// cpusFlag is --cpus: a CPU list, parsed when the flag is, so that a
// malformed one is a usage error (exit 2).
type cpusFlag struct{ set cpuset.Set }

func (c *cpusFlag) String() string { return c.set.String() }

func (c *cpusFlag) Set(s string) error {
	set, err := cpuset.Parse(s)
	if err != nil {
		return err
	}
	c.set = set
	return nil
}

func (*cpusFlag) Type() string { return "list" }

// pinCPUs pins the process to set. A CPU this process may not use, or a
// system that cannot pin, is a usage error (exit 2) naming --cpus; a
// failure to pin is exit 1.
func pinCPUs(set cpuset.Set) error {
	err := cpuset.Pin(set)
	var ue *cpuset.UnavailableError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ue), errors.Is(err, errors.ErrUnsupported):
		return usageError{fmt.Errorf("--cpus %s: %w", set, err)}
	}
	return fmt.Errorf("--cpus %s: %w", set, err)
}

// checkHostPort validates host:port; the port must be at least minPort.
func checkHostPort(s string, minPort uint64) error {
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

// addrFromEnv applies $METEORBENCH_ADDR to an --addr the command line did
// not set, checking it as the flag would be.
func addrFromEnv(cmd *cobra.Command, addr flagSetter) error {
	if cmd.Flags().Changed("addr") {
		return nil
	}
	v, ok := os.LookupEnv(addrEnv)
	if !ok || v == "" {
		return nil
	}
	if err := addr.Set(v); err != nil {
		return fmt.Errorf("$%s: %w", addrEnv, err)
	}
	return nil
}

type flagSetter interface{ Set(string) error }

// writeAddrFile writes addr and a newline to path, atomically, so a
// reader never sees half of it.
func writeAddrFile(path, addr string) error {
	if err := output.WriteFile(path, []byte(addr+"\n"), 0o644); err != nil {
		return fmt.Errorf("--addr-file: %w", err)
	}
	return nil
}

// serveNoArgs refuses positional arguments as a usage error (exit 2).
func serveNoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args[0])}
	}
	return nil
}

func serveParseLevel(s string) (slog.Level, error) {
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

// serveByteSize is a flag value in bytes that accepts IEC (KiB, MiB, GiB) and
// SI (KB, MB, GB) suffixes.
type serveByteSize int64

func (b *serveByteSize) String() string {
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

func (b *serveByteSize) Set(s string) error {
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
	*b = serveByteSize(n * mult)
	return nil
}

func (*serveByteSize) Type() string { return "size" }
