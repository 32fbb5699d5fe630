// Package jsoncodec names the JSON libraries the "rest" protocol can be
// measured with (run --json-codec), on both sides: the load generator
// encodes and decodes with the codec of a cell, and asks the server, with
// the Header, to encode and decode that call with the same one. A request
// without the header is served with encoding/json (Std).
//
// Every codec writes JSON that every other one reads back into the same
// records (the round-trip matrix of jsoncodec_test.go): the options below
// keep v2's and sonic's output within what encoding/json accepts.
package jsoncodec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
)

// Header names the codec of a REST JSON request ("v2", "sonic"); absent
// or "std" is encoding/json. The server answers an unknown name with 400.
const Header = "X-Meteorbench-Json-Codec"

// The codecs' names, as run --json-codec and Header spell them.
const (
	Std   = "std"   // encoding/json: Go 1.26's v1 engine
	V2    = "v2"    // github.com/go-json-experiment/json: Go 1.27's engine
	Sonic = "sonic" // github.com/bytedance/sonic: JIT (amd64, arm64)
)

// A Codec is one JSON library: how it marshals and unmarshals, and how it
// writes one value and a newline, as encoding/json's Encoder.Encode does.
type Codec struct {
	Name    string // Std, V2, Sonic
	Library string // "encoding/json", "encoding/json/v2 (go-json-experiment)"
	Module  string // the Go module the library comes from; "" for the standard library

	Marshal   func(v any) ([]byte, error)
	Unmarshal func(b []byte, v any) error
	// encode writes v's JSON and a newline to buf.
	encode func(buf *bytes.Buffer, v any) error
}

// v2Options keep the v2 engine's output and input within what v1 writes
// and reads: nil slices and maps as null (v2 writes [] and {}), names
// matched regardless of case on decode (v2 is case-sensitive). v2 still
// rejects invalid UTF-8 and duplicate names, which no codec here writes.
var v2Options = jsonv2.JoinOptions(
	jsonv2.FormatNilSliceAsNull(true),
	jsonv2.FormatNilMapAsNull(true),
	jsonv2.MatchCaseInsensitiveNames(true),
)

var codecs = []*Codec{
	{
		Name: Std, Library: "encoding/json",
		Marshal:   json.Marshal,
		Unmarshal: json.Unmarshal,
		encode:    func(buf *bytes.Buffer, v any) error { return json.NewEncoder(buf).Encode(v) },
	},
	{
		Name: V2, Library: "encoding/json/v2 (go-json-experiment)", Module: "github.com/go-json-experiment/json",
		Marshal:   func(v any) ([]byte, error) { return jsonv2.Marshal(v, v2Options) },
		Unmarshal: func(b []byte, v any) error { return jsonv2.Unmarshal(b, v, v2Options) },
		encode: func(buf *bytes.Buffer, v any) error {
			if err := jsonv2.MarshalWrite(buf, v, v2Options); err != nil {
				return err
			}
			return buf.WriteByte('\n')
		},
	},
}

func init() {
	if sonicCodec != nil { // sonic.go; nil where sonic does not build
		codecs = append(codecs, sonicCodec)
	}
}

// Names lists the codecs, in display order.
func Names() []string {
	out := make([]string, len(codecs))
	for i, c := range codecs {
		out[i] = c.Name
	}
	return out
}

// Default is encoding/json.
func Default() *Codec { return codecs[0] }

// Get is the codec named name; "" is Std.
func Get(name string) (*Codec, error) {
	if name == "" {
		return Default(), nil
	}
	i := slices.IndexFunc(codecs, func(c *Codec) bool { return c.Name == name })
	if i < 0 && name == Sonic {
		return nil, fmt.Errorf("JSON codec sonic: not in this build (sonic needs a 64-bit GOARCH, this is %s)", runtime.GOARCH)
	}
	if i < 0 {
		return nil, fmt.Errorf("unknown JSON codec %q (want %s)", name, strings.Join(Names(), ", "))
	}
	return codecs[i], nil
}

// Index is the codec's place in Names, for counters indexed by codec.
func (c *Codec) Index() int { return slices.Index(codecs, c) }

// Encode writes v's JSON and a newline to buf, as encoding/json's
// Encoder.Encode does.
func (c *Codec) Encode(buf *bytes.Buffer, v any) error { return c.encode(buf, v) }

// An Encoder writes values, each as its JSON and a newline, in one Write.
type Encoder interface{ Encode(v any) error }

// NewEncoder writes values to w: encoding/json's own Encoder for Std;
// else straight into w when it is a *bytes.Buffer, or each value encoded
// into a reused buffer and written at once.
func (c *Codec) NewEncoder(w io.Writer) Encoder {
	if c.Name == Std {
		return json.NewEncoder(w)
	}
	if b, ok := w.(*bytes.Buffer); ok {
		return intoBuffer{b: b, c: c}
	}
	return &bufEncoder{w: w, c: c}
}

type intoBuffer struct {
	b *bytes.Buffer
	c *Codec
}

func (e intoBuffer) Encode(v any) error { return e.c.encode(e.b, v) }

type bufEncoder struct {
	w   io.Writer
	c   *Codec
	buf bytes.Buffer
}

func (e *bufEncoder) Encode(v any) error {
	e.buf.Reset()
	if err := e.c.encode(&e.buf, v); err != nil {
		return err
	}
	_, err := e.w.Write(e.buf.Bytes())
	return err
}
