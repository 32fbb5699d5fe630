package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meteorbench/meteorbench/internal/addrfile"
	"github.com/meteorbench/meteorbench/internal/flagvalue"
	"github.com/meteorbench/meteorbench/internal/server"
)

func newHealthCmd() *cobra.Command {
	var (
		addr     = flagvalue.HostPort{Addr: "127.0.0.1:8080", MinPort: 1} // a port to dial
		addrFile string
		timeout  time.Duration
		useTLS   bool
	)
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check a running server on both protocols (exit 0 healthy, 1 not)",
		Long: `Check a meteorbench server: GET /healthz must answer {"status":"ok"} and the
gRPC health service must answer SERVING, both on the one port. Prints one line;
exits 0 when healthy, 1 when not. Meant for the container's HEALTHCHECK (the
image has no shell or curl).

The server's address is, first found: --addr; the file --addr-file (or
$` + addrFileEnv + `) names, as "serve --addr-file" wrote it; $` + addrEnv + `; 127.0.0.1:8080.
A wildcard or empty host means 127.0.0.1.`,
		Args: serveNoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("addr-file") {
				addrFile = os.Getenv(addrFileEnv)
			}
			from, fileTLS, err := healthAddr(cmd, &addr, addrFile)
			if err != nil {
				return usageError{err}
			}
			target, err := flagvalue.DialAddr(from)
			if err != nil {
				return usageError{err}
			}
			if timeout <= 0 {
				return usageError{fmt.Errorf("--timeout %v: must be positive", timeout)}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			var tc *tls.Config
			if useTLS || fileTLS {
				// A liveness check of a local process: whose certificate
				// it is does not matter, that it answers does.
				tc = &tls.Config{InsecureSkipVerify: true}
			}
			if err := server.CheckTLS(ctx, target, tc); err != nil {
				// One line, whatever failed.
				return fmt.Errorf("%s is not healthy: %s", target, strings.ReplaceAll(err.Error(), "\n", "; "))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "meteorbench health: %s is healthy (REST /healthz ok, gRPC SERVING)\n", target)
			return nil
		},
	}
	cmd.Flags().Var(&addr, "addr", "`host:port` of the server (an empty or wildcard host means 127.0.0.1); default from --addr-file, $"+addrEnv+", else 127.0.0.1:8080")
	cmd.Flags().StringVar(&addrFile, "addr-file", "", "read the server's address from this `file`, written by serve --addr-file, when it exists; default $"+addrFileEnv)
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Second, "give up after this long")
	cmd.Flags().BoolVar(&useTLS, "tls", false, "check over TLS, without verifying the certificate (default: when the address file says the server is TLS)")
	return cmd
}

// healthAddr picks the address to check: --addr when given, else the
// address file when it exists, else $METEORBENCH_ADDR, else the default. A
// missing file is not an error (the server may not have started yet); an
// unreadable or malformed one is.
func healthAddr(cmd *cobra.Command, addr *flagvalue.HostPort, addrFile string) (string, bool, error) {
	if !cmd.Flags().Changed("addr") && addrFile != "" {
		v, tls, err := addrfile.Read(addrFile)
		switch {
		case err == nil:
			return v, tls, nil
		case !errors.Is(err, fs.ErrNotExist):
			return "", false, fmt.Errorf("--addr-file: %w", err)
		}
	}
	if err := addrFromEnv(cmd, addr); err != nil {
		return "", false, err
	}
	return addr.Addr, false, nil
}
