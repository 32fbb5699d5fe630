package results

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxDocumentSize bounds a result document read by Load: 64 MiB, hundreds
// of times the largest run's document (a default run writes about 100 KB,
// histograms included).
const MaxDocumentSize = 64 << 20

// ErrTooLarge is wrapped when a document exceeds MaxDocumentSize.
var ErrTooLarge = fmt.Errorf("larger than %d MiB, the most a result document may be", MaxDocumentSize>>20)

// maxMaps bounds the JSON objects of a document that decode into Go maps
// (error classes and examples, intervals, repeats): a map costs about 300
// bytes in memory for as little as 2 in JSON, so a document of nothing but
// `{}` repeats once took 24 times its size to read. No run writes more than
// a handful per cell.
const maxMaps = 1 << 18

// Load reads, decodes and validates the result document at path: at most
// MaxDocumentSize bytes, the schema checked, then every value (Validate).
// Errors name the file; an invalid value's error also names its JSON path.
// Cancelling ctx stops the read between chunks.
func Load(ctx context.Context, path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := ReadLimited(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// ReadLimited is Load from a reader: it reads at most MaxDocumentSize
// bytes, refusing more, checks the document's shape and values and
// decodes it.
func ReadLimited(ctx context.Context, rd io.Reader) (*Result, error) {
	var buf bytes.Buffer
	if st, ok := rd.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() {
			if fi.Size() > MaxDocumentSize {
				return nil, fmt.Errorf("%d MiB: %w", fi.Size()>>20, ErrTooLarge)
			}
			buf.Grow(int(fi.Size()) + bytes.MinRead) // one buffer of the right size
		}
	}
	n, err := buf.ReadFrom(io.LimitReader(ctxReader{ctx, rd}, MaxDocumentSize+1))
	if err != nil {
		return nil, err
	}
	if n > MaxDocumentSize {
		return nil, ErrTooLarge
	}
	data := buf.Bytes()
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &NotResultError{fmt.Errorf("decode: %w", io.EOF)}
	}
	if err := checkShape(data); err != nil {
		return nil, err
	}
	// Unmarshal, not a Decoder: a Decoder would copy data into a buffer of
	// its own first.
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, &NotResultError{fmt.Errorf("decode: %w", err)}
	}
	if r.Schema != Schema {
		return nil, &NotResultError{fmt.Errorf("schema %q, want %q", r.Schema, Schema)}
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if err := Validate(&r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ctxReader is a reader that stops when its context is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}

// checkShape scans the JSON text once, without decoding it, and refuses
// (NotResultError) a nesting deeper than 64 or more than maxMaps objects
// that would decode into maps. Malformed JSON passes: the decoder reports
// it better.
func checkShape(data []byte) error {
	const maxDepth = 64
	type frame struct {
		array  bool
		key    string // the key this container is the value of
		isMaps bool   // an array whose elements are maps (repeats)
	}
	var (
		stack   []frame
		lastKey string // the last string in an object before a ':'
		lastStr []byte
		maps    int
	)
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			j := i + 1
			for j < len(data) && data[j] != '"' {
				if data[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(data) {
				return nil
			}
			lastStr = data[i+1 : j]
			i = j
		case ':':
			lastKey = string(lastStr)
		case '{', '[':
			if len(stack) >= maxDepth {
				return &NotResultError{fmt.Errorf("JSON nested deeper than %d levels", maxDepth)}
			}
			key := ""
			if n := len(stack); n > 0 && !stack[n-1].array {
				key = lastKey
			}
			if data[i] == '{' {
				inMapArray := len(stack) > 0 && stack[len(stack)-1].isMaps
				switch {
				case inMapArray, key == "error_classes", key == "error_examples", key == "ci":
					if maps++; maps > maxMaps {
						return &NotResultError{fmt.Errorf("more than %d error classes, intervals and repeats", maxMaps)}
					}
				}
			}
			stack = append(stack, frame{array: data[i] == '[', key: key, isMaps: data[i] == '[' && key == "repeats"})
		case '}', ']':
			if len(stack) == 0 {
				return nil
			}
			stack = stack[:len(stack)-1]
		}
	}
	return nil
}

// NotResultError says a document is no meteorbench result at all (not
// JSON, JSON of another shape, another schema), as against a result with a
// bad value (InvalidError) or one too large (ErrTooLarge).
type NotResultError struct{ Err error }

// Error says why, without the package's words: "not a meteorbench result
// (truncated JSON)".
func (e *NotResultError) Error() string {
	return "not a meteorbench result (" + notResultReason(e.Err) + ")"
}

func (e *NotResultError) Unwrap() error { return e.Err }

// UnmarshalJSON decodes a cell, and reads generator_bottleneck as older
// meteorbench/v1 documents wrote it too: a string, the reason, which reads
// as true with that reason ("" as false).
func (c *Cell) UnmarshalJSON(data []byte) error {
	type plain Cell // the same fields, without this method
	aux := struct {
		*plain
		// Shallower than plain's field of the same name: it takes the value.
		GeneratorBottleneck json.RawMessage `json:"generator_bottleneck,omitempty"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	c.GeneratorBottleneck = false
	switch raw := bytes.TrimSpace(aux.GeneratorBottleneck); {
	case len(raw) == 0, string(raw) == "null":
	case raw[0] == '"':
		var why string
		if err := json.Unmarshal(raw, &why); err != nil {
			return fmt.Errorf("generator_bottleneck: %w", err)
		}
		c.GeneratorBottleneck = why != ""
		if c.GeneratorBottleneckReason == "" {
			c.GeneratorBottleneckReason = why
		}
	default:
		if err := json.Unmarshal(raw, &c.GeneratorBottleneck); err != nil {
			return fmt.Errorf("generator_bottleneck: %w", err)
		}
	}
	return nil
}

// notResultReason says why a document is no result, in a reader's words.
func notResultReason(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return "empty file"
	case errors.Is(err, io.ErrUnexpectedEOF),
		errors.As(err, &syntax) && syntax.Error() == "unexpected end of JSON input":
		return "truncated JSON"
	case errors.As(err, &syntax):
		return fmt.Sprintf("not JSON: %v at byte %d", syntax, syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("JSON of another shape: %v", typ)
	}
	return strings.TrimPrefix(err.Error(), "decode: ")
}
