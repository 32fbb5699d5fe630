package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meteorbench/meteorbench/internal/cpuset"
	"github.com/meteorbench/meteorbench/internal/flagvalue"
	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/server"
)

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
		addr     = flagvalue.HostPort{Addr: defaultServeAddr} // port 0 picks a free one
		proc     server.Process
		logLevel string
		maxBody  = flagvalue.ByteSize(server.DefaultMaxBody)
		memLimit flagvalue.ByteSize // 0: server.DefaultMemoryLimit
		cpus     flagvalue.CPUs
		cfg      server.Config
		tlsFlags server.TLSFlags
		payloadF payload.Flags // payload.go
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve REST, gRPC, gRPC-Web and Connect on one port",
		Long: `Serve the 1000 meteorite landings on ONE port: REST with JSON or protobuf
bodies over HTTP/1.1 or HTTP/2 (h2c with prior knowledge; ALPN h2 with
--tls), gRPC (with health and reflection) over HTTP/2, and gRPC-Web and
Connect over either. Any request works on any HTTP/2 connection: one a
client opens with a gRPC call goes to the native gRPC server, any other
(and any through a proxy: Forwarded, Via, X-Forwarded-* headers) to the
HTTP server, which hands its gRPC calls to the same gRPC server.

REST:  GET  /api/MeteoriteLandings                      the version string
       GET  /api/MeteoriteLandings/LargePayload         the 1000 records
       POST /api/MeteoriteLandings/LargePayload         upload records -> "SUCCESS"
       GET  /api/MeteoriteLandings/LargePayload/stream  NDJSON, one record a line
       GET  /healthz, GET /metrics (Prometheus)
       GET  /debug/pprof/... with --pprof only (Go's profiles, behind --token)
       Send "Accept: application/x-protobuf" (and, to POST, "Content-Type:
       application/x-protobuf") for protobuf bodies.
gRPC:  MeteoriteLandingsService.MeteoriteLandingsService, grpc.health.v1,
       server reflection.
gRPC-Web, Connect: POST /MeteoriteLandingsService.MeteoriteLandingsService/<Method>
       with application/grpc-web+proto, or application/proto (Connect unary)
       and application/connect+proto (Connect streaming, GetLargePayload).
--payload FILE serves a JSON sample of your own data on the same routes
instead, and on gRPC as meteorbench.payload.Payload ('meteorbench schema FILE').

Prints one line on stderr once listening, then logs nothing per request.
--cpus pins the whole process (every thread) to those CPUs and sets
GOMAXPROCS to their number before serving; the start-up line then says so.
SIGINT or SIGTERM drains in-flight calls (within --shutdown-timeout) and exits 0.`,
		Args: serveNoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			level, err := flagvalue.ParseLevel(logLevel)
			if err != nil {
				return usageError{err}
			}
			if err := addrFromEnv(cmd, &addr); err != nil {
				return usageError{err}
			}
			proc.Addr, proc.Stderr = addr.Addr, cmd.ErrOrStderr()
			if !cmd.Flags().Changed("addr-file") {
				proc.AddrFile = os.Getenv(addrFileEnv)
			}
			if !cmd.Flags().Changed("token") {
				cfg.Token = os.Getenv(server.TokenEnv)
				if err := server.CheckToken(cfg.Token); err != nil { // named as the variable it came from
					return usageError{fmt.Errorf("$%s: %w", server.TokenEnv, err)}
				}
			}
			if err := tlsFlags.Check(); err != nil {
				return usageError{err}
			}
			cfg.MaxBody = int64(maxBody)
			proc.MemoryLimitFrom = "--memory-limit"
			if cfg.MemoryLimit = int64(memLimit); cfg.MemoryLimit == 0 {
				cfg.MemoryLimit, proc.MemoryLimitFrom = server.DefaultMemoryLimit()
			}
			cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			if err := cfg.Validate(); err != nil {
				return usageError{fmt.Errorf("--%w", err)}
			}
			if cfg.Pprof {
				if err := server.CheckPprof(addr.Addr, cfg.Token); err != nil {
					return usageError{fmt.Errorf("--%w", err)}
				}
			}
			// The process-wide settings, here in main's package: pin first,
			// so every thread started from here on inherits the mask.
			if cpus.List.Len() > 0 {
				if err := pinCPUs(cpus.List); err != nil {
					return err
				}
				proc.Pinned = fmt.Sprintf(", pinned to CPUs %s (GOMAXPROCS %d)", cpus.List, runtime.GOMAXPROCS(0))
			}
			host, _, _ := net.SplitHostPort(addr.Addr)
			if err := tlsFlags.Apply(&cfg, host, cmd.ErrOrStderr()); errors.Is(err, server.ErrCertFiles) {
				return usageError{err}
			} else if err != nil {
				return err
			}
			if cfg.Payload, err = payloadF.Load(false); err != nil {
				return usageError{err}
			} else if cfg.Payload != nil {
				note(cmd.ErrOrStderr(), cfg.Payload.Notes)
				warn(cmd.ErrOrStderr(), cfg.Payload.Warnings)
			}
			if cfg.MemoryLimit > 0 {
				// The runtime collects harder and returns memory to the
				// system as the heap nears the limit (after a burst).
				debug.SetMemoryLimit(cfg.MemoryLimit)
			}
			return server.ListenAndServe(cmd.Context(), cfg, proc)
		},
	}
	f := cmd.Flags()
	f.Var(&addr, "addr", "`host:port` to listen on (port 0 picks a free one); default $"+addrEnv+", else "+defaultServeAddr)
	f.StringVar(&proc.AddrFile, "addr-file", "", "write the bound host:port to this `file` (for health --addr-file), removed at exit; default $"+addrFileEnv)
	f.StringVar(&cfg.Token, "token", "", "require this bearer `token` on the data calls (REST Authorization header, gRPC authorization metadata); default $"+server.TokenEnv)
	f.Var(&maxBody, "max-body", "largest request body / gRPC message (e.g. 8MiB, 512KiB, 1048576)")
	f.Var(&memLimit, "memory-limit", "memory the server may use (e.g. 512MiB): a quarter of it bounds, across all connections, the answers queued for clients and request bodies being read (over it, large calls get 503 / RESOURCE_EXHAUSTED); also Go's soft memory limit. Default: 3/4 of the cgroup's memory limit, else 1/2 of physical memory")
	f.IntVar(&cfg.MaxConns, "max-conns", 0, "most connections open at once, REST and gRPC together; past it a new connection is closed at once. Each holds 64 KiB of the memory budget. Default: half the budget's worth, --memory-limit / 512 KiB (1536 for 768MiB)")
	f.Uint32Var(&cfg.MaxConcurrentStreams, "max-streams", server.DefaultMaxConcurrentStreams, "concurrent gRPC calls allowed per connection")
	f.DurationVar(&cfg.HeaderTimeout, "header-timeout", server.DefaultHeaderTimeout, "time a new connection gets to identify its protocol and send its headers")
	f.DurationVar(&cfg.ReadTimeout, "read-timeout", server.DefaultReadTimeout, "time to read one whole HTTP/1.1 request")
	f.DurationVar(&cfg.WriteTimeout, "write-timeout", server.DefaultWriteTimeout, "time to write one HTTP/1.1 response")
	f.DurationVar(&cfg.IdleTimeout, "idle-timeout", server.DefaultIdleTimeout, "close connections idle this long (both protocols)")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "time in-flight calls get to finish after SIGINT/SIGTERM")
	f.Var(&cpus, "cpus", "pin the server to these CPUs, a Linux CPU `list` such as 0, 0-1 or 0,2-3 (GOMAXPROCS becomes their number); default: unpinned")
	registerTLSFlags(f, &tlsFlags)
	registerPayload(f, &payloadF)
	f.BoolVar(&cfg.Pprof, "pprof", false, "serve Go's profiles at /debug/pprof/ (CPU: /debug/pprof/profile?seconds=N, one at a time; for run --profile and go tool pprof), behind --token when one is set; refused on a non-loopback --addr without a token")
	f.StringVar(&logLevel, "log-level", "info", "stderr log level: debug|info|warn|error (nothing is logged per request)")
	f.BoolVar(&cfg.ProxiedGRPCNative, "proxied-grpc-native", false, "keep a connection that opens with gRPC on grpc-go's native transport even when a reverse proxy's headers (X-Forwarded-For, Via, Forwarded) show it pooled; for a proxy that keeps gRPC on connections of its own (REST on such a connection gets 415). Default: such a connection goes to net/http, where any request works and gRPC costs connect's server CPU (about 2.8x native per small call)")
	f.StringVar(&proc.NetNS, "netns", "", "also listen on the same port inside this network `namespace` (run's packet link makes it)")
	f.MarkHidden("netns")
	return cmd
}

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

// serveNoArgs refuses positional arguments as a usage error (exit 2).
func serveNoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args[0])}
	}
	return nil
}

// registerTLSFlags defines serve's TLS flags on f.
func registerTLSFlags(f *pflag.FlagSet, t *server.TLSFlags) {
	f.StringVar(&t.Cert, "tls-cert", "", "serve TLS with this PEM certificate `file` (chain included; with --tls-key)")
	f.StringVar(&t.Key, "tls-key", "", "the PEM private key `file` of --tls-cert")
	f.BoolVar(&t.SelfSigned, "tls-self-signed", false, "serve TLS with an ephemeral self-signed ECDSA certificate for localhost, 127.0.0.1, ::1, the listen host and --tls-host; its SHA-256 fingerprint is printed at start")
	f.StringVar(&t.CertOut, "tls-cert-out", "", "with --tls-self-signed: write the certificate's PEM to this `file`, for clients to trust (curl --cacert, run --tls-ca)")
	f.StringSliceVar(&t.Hosts, "tls-host", nil, "with --tls-self-signed: more host names or IP addresses for the certificate (e.g. the server's public address)")
	f.BoolVar(&t.AllowPlaintext, "tls-allow-plaintext", false, "with TLS: also serve plaintext clients on the same port (for run --tls both); not for an exposed server")
}
