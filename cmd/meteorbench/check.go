package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/meteorbench/meteorbench/internal/loadgen"
	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/server"
)

func newCheckCmd() *cobra.Command {
	var target, token, format string
	var tlsFlags runTLSFlags
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Say which scenarios and protocols a target serves of the contract (exit 0 something, 1 nothing)",
		Long: `Ask a server every call of the contract once (docs/contract.md): the four
scenarios over rest (JSON), rest-protobuf and grpc, the records asked for
(?records=10, metadata meteorbench-records) on the list and stream calls,
and the optional parts (meteorbench's /metrics for server CPU per call,
/healthz). Every answer is decoded and checked as run checks it. One table;
exit 0 when at least one call is served, 1 when none is.

'meteorbench run --target' against the same server measures what it serves
and marks the rest as not served.`,
		Example: `  meteorbench check --target 127.0.0.1:8080
  meteorbench check --target 127.0.0.1:8080 --format json | jq '.calls[] | select(.served)'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if args = tlsFlags.takeModeArg(cmd.Flags(), args); len(args) > 0 {
				return usageError{fmt.Errorf("check takes no arguments, got %q", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, _, err := net.SplitHostPort(target); err != nil {
				return usageError{fmt.Errorf("--target %q: want host:port", target)}
			}
			if format != "table" && format != "json" {
				return usageError{fmt.Errorf("--format %q: want table or json", format)}
			}
			if !cmd.Flags().Changed("token") {
				token = os.Getenv(server.TokenEnv)
			}
			cfg := loadgen.Config{Target: target, Token: token}
			if err := tlsFlags.apply(&cfg, target); err != nil {
				return usageError{err}
			}
			if len(cfg.TLS) > 1 {
				return usageError{fmt.Errorf("--tls both: check asks over one transport, on or off")}
			}
			c, err := loadgen.CheckContract(cmd.Context(), cfg)
			if err != nil {
				if errors.Is(err, loadgen.ErrInterrupted) {
					return &exitError{130, err}
				}
				return err
			}
			out := cmd.OutOrStdout()
			if format == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				err = enc.Encode(c)
			} else {
				err = report.WriteContract(out, c)
			}
			if err != nil {
				return err
			}
			if !c.Serves() {
				hint := ""
				if len(cfg.TLS) == 0 {
					hint = " (asked in plaintext: a TLS server needs --tls)"
				}
				return &exitError{1, fmt.Errorf("target %s %w%s", target, loadgen.ErrNotContract, hint)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&target, "target", "", "host:port of the server to check (required)")
	cmd.Flags().StringVar(&token, "token", "", "bearer token for a protected server (default $"+server.TokenEnv+")")
	cmd.Flags().StringVar(&format, "format", "table", "table or json")
	tlsFlags.register(cmd.Flags())
	return cmd
}
