package main

// --payload, --schema and --message (serve, run, capacity), and the
// schema command: the user's own data instead of the meteorites.

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meteorbench/meteorbench/internal/payload"
)

// registerPayload defines the flags that name a payload (checked and
// loaded by payload.Flags.Load). --schema is shared with run's
// --grpc-method (endpoints.go), which it may describe instead.
func registerPayload(fl *pflag.FlagSet, f *payload.Flags) {
	fl.StringVar(&f.File, "payload", "", "serve and measure your own data instead of the meteorites: a JSON sample of one of your responses, an array of objects (the list's items) or one object (one item); its protobuf schema is derived unless --schema is given (see 'meteorbench schema')")
	fl.StringVar(&f.Schema, "schema", "", "with --payload: your own .proto `file`, instead of deriving one (the sample is read with the protobuf JSON mapping); with --grpc-method (run): the .proto that defines it, instead of the server's reflection")
	fl.StringVar(&f.Message, "message", "", "with --schema: the item message (the list's element type), e.g. MeteoriteLanding")
}

func newSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema FILE",
		Short: "Print the protobuf schema derived from a JSON sample (what --payload serves)",
		Long: `Print the .proto that --payload FILE serves when no --schema is given: the
sample's items as message Item (objects as messages, arrays as repeated fields,
integers int64, other numbers double, RFC 3339 date-times
google.protobuf.Timestamp, fields missing or null in some items optional,
fields of mixed JSON types google.protobuf.Value, with a warning on stderr),
its list, and the service meteorbench.payload.Payload with the contract's four
calls. protoc and grpcurl accept it; edit it and give it back with --schema.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("schema takes one FILE, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := payload.Derive(args[0])
			if err != nil {
				return usageError{err}
			}
			warn(cmd.ErrOrStderr(), d.Warnings)
			_, err = io.WriteString(cmd.OutOrStdout(), strings.TrimLeft(d.Proto, "\n"))
			return err
		},
	}
}

// warn prints warnings on w, one line each.
func warn(w io.Writer, warnings []string) {
	for _, s := range warnings {
		fmt.Fprintln(w, "meteorbench: warning:", s)
	}
}
