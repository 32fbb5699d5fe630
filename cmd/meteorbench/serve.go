package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/meteorbench/meteorbench/internal/server"
)

// tokenEnv names the environment variable that supplies --token's default
// (safer than the flag, which other users can read in the process list).
const tokenEnv = "METEORBENCH_TOKEN"

func newServeCmd() *cobra.Command {
	var (
		addr     string
		logLevel string
		maxBody  = serveByteSize(server.DefaultMaxBody)
		cfg      server.Config
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

Prints one line on stderr once listening, then logs nothing per request.
SIGINT or SIGTERM drains in-flight calls (within --shutdown-timeout) and exits 0.`,
		Args: serveNoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			level, err := serveParseLevel(logLevel)
			if err != nil {
				return usageError{err}
			}
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return usageError{fmt.Errorf("--addr %q: %w", addr, err)}
			}
			if !cmd.Flags().Changed("token") {
				cfg.Token = os.Getenv(tokenEnv)
			}
			cfg.MaxBody = int64(maxBody)
			cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			srv, err := server.New(cfg)
			if err != nil {
				return err
			}
			var lc net.ListenConfig
			ln, err := lc.Listen(cmd.Context(), "tcp", addr)
			if err != nil {
				return err
			}
			// The one start-up line; `run` reads the address after "listening on ".
			fmt.Fprintf(cmd.ErrOrStderr(), "meteorbench serve: listening on %s (REST over HTTP/1.1 and gRPC over HTTP/2)\n", ln.Addr())
			cfg.Logger.Debug("configuration", "max_body", cfg.MaxBody, "token", cfg.Token != "",
				"header_timeout", cfg.HeaderTimeout, "read_timeout", cfg.ReadTimeout,
				"write_timeout", cfg.WriteTimeout, "idle_timeout", cfg.IdleTimeout,
				"shutdown_timeout", cfg.ShutdownTimeout, "max_streams", cfg.MaxConcurrentStreams)
			return srv.Serve(cmd.Context(), ln)
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", ":8080", "`host:port` to listen on (port 0 picks a free one)")
	f.StringVar(&cfg.Token, "token", "", "require this bearer `token` on the data calls (REST Authorization header, gRPC authorization metadata); default $"+tokenEnv)
	f.Var(&maxBody, "max-body", "largest request body / gRPC message (e.g. 8MiB, 512KiB, 1048576)")
	f.Uint32Var(&cfg.MaxConcurrentStreams, "max-streams", server.DefaultMaxConcurrentStreams, "concurrent gRPC calls allowed per connection")
	f.DurationVar(&cfg.HeaderTimeout, "header-timeout", server.DefaultHeaderTimeout, "time a new connection gets to identify its protocol and send its headers")
	f.DurationVar(&cfg.ReadTimeout, "read-timeout", server.DefaultReadTimeout, "time to read one whole HTTP/1.1 request")
	f.DurationVar(&cfg.WriteTimeout, "write-timeout", server.DefaultWriteTimeout, "time to write one HTTP/1.1 response")
	f.DurationVar(&cfg.IdleTimeout, "idle-timeout", server.DefaultIdleTimeout, "close connections idle this long (both protocols)")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "time in-flight calls get to finish after SIGINT/SIGTERM")
	f.StringVar(&logLevel, "log-level", "info", "stderr log level: debug|info|warn|error (nothing is logged per request)")
	return cmd
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
