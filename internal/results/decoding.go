package results

// Decoding is how a client decoded a user's endpoint's answers: into
// typed values (as generated code would), or generically.
type Decoding string

const (
	// DecodeCompiled: gRPC answers by the compiled codec of the method's
	// output type, built at run time (internal/payload): typed values, as
	// fast as generated code.
	DecodeCompiled Decoding = "compiled"
	// DecodeDynamic: gRPC answers into dynamicpb messages, for an output
	// type the compiled codec does not handle: several times slower.
	DecodeDynamic Decoding = "dynamicpb"
	// DecodeTypedJSON: REST answers into the typed values of the gRPC
	// output type's JSON mapping.
	DecodeTypedJSON Decoding = "typed-json"
	// DecodeGenericJSON: REST answers into generic values
	// (map[string]any, []any...), with no schema for them.
	DecodeGenericJSON Decoding = "generic-json"
)

// Generic reports whether d decodes without a schema's types.
func (d Decoding) Generic() bool { return d == DecodeDynamic || d == DecodeGenericJSON }

// Phrase says d in a verdict line: "generic JSON values".
func (d Decoding) Phrase() string {
	switch d {
	case DecodeDynamic:
		return "dynamicpb messages"
	case DecodeGenericJSON:
		return "generic JSON values"
	case DecodeTypedJSON:
		return "typed JSON values"
	}
	return string(d) + " codec"
}
