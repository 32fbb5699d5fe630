package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/flagvalue"
	"github.com/meteorbench/meteorbench/internal/job"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/server"
)

func newCheckCmd() *cobra.Command {
	var target flagvalue.Targets
	var token, format string
	var scenarios []string
	var tlsFlags job.ClientTLS
	var protocols job.ProtocolFlags
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Say which scenarios and protocols a target serves of the contract (exit 0 something, 1 nothing)",
		Long: `Ask a server every call of the contract once (docs/contract.md): the four
scenarios (or those of --scenario: upload, chat, feed ask one message of a stream), over each protocol of --proto (as run takes it: by default rest
(JSON), rest-protobuf and grpc; also grpc-web and connect, or all), REST,
gRPC-Web and Connect at each HTTP version of --http-version (default 1.1;
2 is h2c with prior knowledge, ALPN h2 under --tls; grpc is asked once),
the records asked for (?records=10, metadata meteorbench-records) on the
list and stream calls, and the optional parts (meteorbench's /metrics for
server CPU per call, /healthz). Every answer is decoded and checked as run
checks it. One table; exit 0 when at least one call is served, 1 when none
is.

'meteorbench run --target' against the same server measures what it serves
and marks the rest as not served. meteorbench serve serves gRPC-Web and
Connect on its one port; the per-protocol --target gives them an address
with grpc-web=HOST:PORT and connect=HOST:PORT (a proxy, a server of their
own), and without one check lists them as not served, as run does.`,
		Example: `  meteorbench check --target 127.0.0.1:8080
  meteorbench check --target 127.0.0.1:8080 --proto all --http-version 1.1,2
  meteorbench check --target rest=127.0.0.1:8080,grpc=127.0.0.1:9090
  meteorbench check --target 127.0.0.1:8080 --format json | jq '.calls[] | select(.served)'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if args = tlsFlags.Mode.TakeArg(cmd.Flags(), args); len(args) > 0 {
				return usageError{fmt.Errorf("check takes no arguments, got %q", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("token") {
				token = os.Getenv(server.TokenEnv)
			}
			c := job.CheckConfig{Config: plan.Config{Target: target.T, Token: token, Scenarios: flagvalue.ExpandAll(scenarios, api.Scenarios())}, Format: format}
			if err := protocols.Apply(&c.Config, cmd.Flags().Changed); err != nil {
				return usageError{err}
			}
			if err := tlsFlags.Apply(&c.Config, target.T.String()); err != nil {
				return usageError{err}
			}
			if err := c.Validate(); err != nil {
				return usageError{err}
			}
			return jobError(job.Check(cmd.Context(), c, cmd.OutOrStdout()))
		},
	}
	cmd.Flags().Var(&target, "target", "the server to check (required): host:port of one port serving REST and gRPC, or rest=HOST:PORT,grpc=HOST:PORT for servers on ports of their own (either alone; grpc-web= and connect= give those theirs)")
	cmd.Flags().StringVar(&token, "token", "", "bearer token for a protected server (default $"+server.TokenEnv+")")
	cmd.Flags().StringVar(&format, "format", "table", "table or json")
	cmd.Flags().StringSliceVar(&scenarios, "scenario", []string{"all"}, "scenarios, as run takes them: all (the four calls), or names: small, large, stream, post, upload, chat, feed (the streams: one message each)")
	registerProtocols(cmd.Flags(), &protocols) // run's --proto and --http-version
	registerClientTLS(cmd.Flags(), &tlsFlags)
	return cmd
}
