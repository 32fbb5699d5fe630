package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/meteorbench/meteorbench/internal/flagvalue"
	"github.com/meteorbench/meteorbench/internal/job"
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
			if cmd.Flags().Changed("addr") {
				addrFile = "" // --addr wins over the file
			}
			target, fileTLS, err := job.HealthTarget(addrFile, func() (string, error) {
				err := addrFromEnv(cmd, &addr)
				return addr.Addr, err
			})
			if err != nil {
				return usageError{err}
			}
			if timeout <= 0 {
				return usageError{fmt.Errorf("--timeout %v: must be positive", timeout)}
			}
			return job.Health(cmd.Context(), target, useTLS || fileTLS, timeout, cmd.OutOrStdout())
		},
	}
	cmd.Flags().Var(&addr, "addr", "`host:port` of the server (an empty or wildcard host means 127.0.0.1); default from --addr-file, $"+addrEnv+", else 127.0.0.1:8080")
	cmd.Flags().StringVar(&addrFile, "addr-file", "", "read the server's address from this `file`, written by serve --addr-file, when it exists; default $"+addrFileEnv)
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Second, "give up after this long")
	cmd.Flags().BoolVar(&useTLS, "tls", false, "check over TLS, without verifying the certificate (default: when the address file says the server is TLS)")
	return cmd
}
