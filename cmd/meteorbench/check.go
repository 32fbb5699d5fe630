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
)

func newCheckCmd() *cobra.Command {
	var target, token, format string
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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, _, err := net.SplitHostPort(target); err != nil {
				return usageError{fmt.Errorf("--target %q: want host:port", target)}
			}
			if format != "table" && format != "json" {
				return usageError{fmt.Errorf("--format %q: want table or json", format)}
			}
			if !cmd.Flags().Changed("token") {
				token = os.Getenv(tokenEnv)
			}
			c, err := loadgen.CheckContract(cmd.Context(), loadgen.Config{Target: target, Token: token})
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
				return &exitError{1, fmt.Errorf("target %s %w", target, loadgen.ErrNotContract)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&target, "target", "", "host:port of the server to check (required)")
	cmd.Flags().StringVar(&token, "token", "", "bearer token for a protected server (default $"+tokenEnv+")")
	cmd.Flags().StringVar(&format, "format", "table", "table or json")
	return cmd
}
