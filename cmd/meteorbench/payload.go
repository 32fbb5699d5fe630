package main

// --payload, --schema and --message (serve, run, capacity), and the
// schema command: the user's own data instead of the meteorites.

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/payload"
)

// registerPayload defines the flags that name a payload (checked and
// loaded by payload.Flags.Load). --schema is shared with run's
// --grpc-method (endpoints.go), which it may describe instead.
func registerPayload(fl *pflag.FlagSet, f *payload.Flags) {
	fl.StringVar(&f.File, "payload", "", "serve and measure your own data instead of the meteorites: a JSON sample of one of your responses (maybe gzipped), an array of objects (the list's items), an object with the items under one key (--items) or one object (one item); its protobuf schema is derived unless --schema is given (see 'meteorbench schema')")
	fl.StringVar(&f.Schema, "schema", "", "with --payload: your own .proto `file`, instead of deriving one (the sample is read with the protobuf JSON mapping); with --grpc-method (run): the .proto that defines it, instead of the server's reflection")
	fl.StringVar(&f.Message, "message", "", "with --schema: the item message (the list's element type), e.g. MeteoriteLanding")
	registerItems(fl, &f.Items)
}

// registerItems defines --items (serve, run, capacity, schema).
func registerItems(fl *pflag.FlagSet, items *string) {
	fl.StringVar(items, "items", "", "with --payload: the `key` of the sample object whose array holds the items (e.g. statuses for {\"statuses\":[...],\"search_metadata\":{...}}); the answers keep the object around them. Without it, the only key holding an array of objects is taken, with a note; '"+payload.WholeObject+"' serves the object as one item")
}

func newSchemaCmd() *cobra.Command {
	var (
		items string
		check bool
	)
	cmd := &cobra.Command{
		Use:   "schema FILE",
		Short: "Print the protobuf schema derived from a JSON sample (what --payload serves), or check it round-trips",
		Long: `Print the .proto that --payload FILE serves when no --schema is given: the
sample's items as message Item (objects as messages, arrays as repeated fields,
integers int64 (uint64 beyond int64), other numbers double, RFC 3339 date-times
in UTC google.protobuf.Timestamp, fields missing or null in some items
optional; fields of mixed JSON types, null in every item or an empty array in
every item google.protobuf.Value, with a warning on stderr), its list (for a
sample object whose array under one key holds the items, --items: the object
around them), and the service meteorbench.payload.Payload with the contract's
four calls. protoc and grpcurl accept it; edit it and give it back with
--schema. The sample may be gzipped.

With --check, nothing is printed but the check: every item (and the object
around them) is decoded with each JSON codec into the derived types, encoded
as protobuf, decoded, encoded as JSON as the server answers, and compared with
the sample, value by value. What did not come back is listed and the exit
status is 1; otherwise one line says it all came back.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("schema takes one FILE, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if check {
				return checkSchema(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], items)
			}
			d, err := payload.Derive(args[0], items)
			if err != nil {
				return usageError{err}
			}
			note(cmd.ErrOrStderr(), d.Notes)
			warn(cmd.ErrOrStderr(), d.Warnings)
			_, err = io.WriteString(cmd.OutOrStdout(), strings.TrimLeft(d.Proto, "\n"))
			return err
		},
	}
	registerItems(cmd.Flags(), &items)
	cmd.Flags().BoolVar(&check, "check", false, "derive the schema, then send every item through each JSON codec and protobuf and back, and compare with the sample: exit status 1 if anything did not come back as it was")
	return cmd
}

// checkSchema is schema --check: the payload loaded as --payload loads it,
// and its round trip with every JSON codec of this build.
func checkSchema(stdout, stderr io.Writer, file, items string) error {
	p, err := payload.Load(file, payload.Options{Items: items})
	if err != nil {
		return usageError{err}
	}
	note(stderr, p.Notes)
	warn(stderr, p.Warnings)
	var codecs []*jsoncodec.Codec
	for _, name := range jsoncodec.Names() {
		c, _ := jsoncodec.Get(name)
		codecs = append(codecs, c)
	}
	rts, err := p.CheckRoundTrip(codecs)
	if err != nil {
		return usageError{err}
	}
	failed := 0
	var names []string
	for _, r := range rts {
		names = append(names, r.Codec)
		if r.OK() {
			continue
		}
		failed++
		fmt.Fprintf(stdout, "%s: %d values did not come back with %s:\n", p.Name, r.Count, r.Codec)
		for _, d := range r.Diffs {
			fmt.Fprintln(stdout, "  "+d)
		}
		if r.Count > len(r.Diffs) {
			fmt.Fprintf(stdout, "  ... and %d more\n", r.Count-len(r.Diffs))
		}
	}
	if failed > 0 {
		return &exitError{1, fmt.Errorf("schema check: %s: %d of %d JSON codecs did not round-trip the sample", p.Name, failed, len(rts))}
	}
	where := ""
	if k := p.ItemsKey(); k != "" {
		where = fmt.Sprintf(" under %q, with the object around them", k)
	}
	values := ""
	if n := len(p.Warnings); n > 0 {
		values = fmt.Sprintf("; %d warnings", n)
	}
	fmt.Fprintf(stdout, "schema check: %s OK: %d items%s, JSON -> protobuf -> JSON the same values with %s (list answer: %d B JSON with %s, %d B protobuf%s)\n",
		p.Name, p.Len(), where, strings.Join(names, ", "), rts[0].JSONBytes, rts[0].Codec, rts[0].ProtoBytes, values)
	return nil
}

// warn prints warnings on w, one line each.
func warn(w io.Writer, warnings []string) {
	for _, s := range warnings {
		fmt.Fprintln(w, "meteorbench: warning:", s)
	}
}

// note prints notes on w, one line each.
func note(w io.Writer, notes []string) {
	for _, s := range notes {
		fmt.Fprintln(w, "meteorbench: note:", s)
	}
}
