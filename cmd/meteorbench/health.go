package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meteorbench/meteorbench/internal/server"
)

func newHealthCmd() *cobra.Command {
	var (
		addr    string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check a running server on both protocols (exit 0 healthy, 1 not)",
		Long: `Check a meteorbench server: GET /healthz must answer {"status":"ok"} and the
gRPC health service must answer SERVING, both on the one port. Prints one line;
exits 0 when healthy, 1 when not. Meant for the container's HEALTHCHECK (the
image has no shell or curl).`,
		Args: serveNoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			target, err := healthTarget(addr)
			if err != nil {
				return usageError{err}
			}
			if timeout <= 0 {
				return usageError{fmt.Errorf("--timeout %v: must be positive", timeout)}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if err := server.Check(ctx, target); err != nil {
				// One line, whatever failed.
				return fmt.Errorf("%s is not healthy: %s", target, strings.ReplaceAll(err.Error(), "\n", "; "))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "meteorbench health: %s is healthy (REST /healthz ok, gRPC SERVING)\n", target)
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "`host:port` of the server (an empty or wildcard host means 127.0.0.1)")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Second, "give up after this long")
	return cmd
}

// healthTarget turns a listen address (":8080", "0.0.0.0:8080") into one to
// dial.
func healthTarget(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--addr %q: %w", addr, err)
	}
	if port == "" {
		return "", errors.New("--addr: no port")
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}
