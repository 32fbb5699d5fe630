// Package payload serves the user's own data instead of the meteorites
// (--payload FILE): a JSON sample of one of their responses, an array of
// objects (the items of the list) or one object (one item).
//
// The item's protobuf schema is derived from the sample (derive.go) or read
// from the user's .proto (--schema FILE.proto --message NAME), and parsed at
// run time with protocompile. From the message descriptor the package
// builds, once, a Go struct type (reflect.StructOf, with the JSON tags the
// JSON codecs use as they do for a compiled type) and a protobuf codec
// compiled per message: field offsets and protowire appends, no maps and
// no generic trees (types.go, encode.go, decode.go). Every answer is still
// encoded per request, as the meteorites are.
package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Limits of a sample.
const (
	// MaxSampleBytes is the largest sample read.
	MaxSampleBytes = 64 << 20
	// MaxDepth is the deepest nesting of arrays and objects in a sample.
	MaxDepth = 64
)

// PathError is a sample or schema that cannot be served: where (a JSON
// path, "$[3].geolocation") and why. Its text is one line.
type PathError struct {
	File string // the sample's file name
	Path string // "$" for the whole sample
	Msg  string
}

func (e *PathError) Error() string {
	return fmt.Sprintf("payload %s: %s: %s", e.File, e.Path, oneLine(e.Msg))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// readSample reads a sample file within MaxSampleBytes, checks it is JSON
// within MaxDepth, and splits it into its items' raw JSON, each an object.
// array is false for a sample of one object.
func readSample(file string) (items []json.RawMessage, array bool, err error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, false, &PathError{File: file, Path: "$", Msg: err.Error()}
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxSampleBytes+1))
	if err != nil {
		return nil, false, &PathError{File: file, Path: "$", Msg: err.Error()}
	}
	if items, err = splitSample(src); err != nil {
		var pe *PathError
		if errors.As(err, &pe) {
			pe.File = file
		}
		return nil, false, err
	}
	return items, bytes.TrimSpace(src)[0] == '[', nil
}

// splitSample checks src and splits it into its items (see readSample).
func splitSample(src []byte) ([]json.RawMessage, error) {
	if len(src) > MaxSampleBytes {
		return nil, &PathError{Path: "$", Msg: fmt.Sprintf("the sample is over the %d MiB limit", MaxSampleBytes>>20)}
	}
	if !json.Valid(src) || depth(src) > MaxDepth {
		if err := scan(src); err != nil { // slower: it names the place
			return nil, err
		}
	}
	src = bytes.TrimSpace(src)
	switch src[0] {
	case '{':
		return []json.RawMessage{src}, nil
	case '[':
	default:
		return nil, &PathError{Path: "$", Msg: "the sample must be an array of objects or one object, not " + JSONKind(src[0])}
	}
	var items []json.RawMessage
	if err := json.Unmarshal(src, &items); err != nil {
		return nil, &PathError{Path: "$", Msg: "not JSON: " + err.Error()}
	}
	if len(items) == 0 {
		return nil, &PathError{Path: "$", Msg: "an empty array: no item to serve or to derive a schema from"}
	}
	for i, it := range items {
		it = bytes.TrimSpace(it)
		items[i] = it
		if it[0] == '[' {
			return nil, &PathError{Path: "$[" + strconv.Itoa(i) + "]", Msg: "an array of arrays: the items must be objects"}
		}
		if it[0] != '{' {
			return nil, &PathError{Path: "$[" + strconv.Itoa(i) + "]", Msg: "an item must be an object, not " + JSONKind(it[0])}
		}
	}
	return items, nil
}

// JSONKind names the JSON value that starts with b: "an object".
func JSONKind(b byte) string {
	switch b {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// depth is the deepest nesting of arrays and objects in src, valid JSON.
func depth(src []byte) int {
	d, most, inString := 0, 0, false
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			d++
			most = max(most, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return most
}

// scan walks src token by token, keeping the JSON path, and fails at the
// first syntax error or nesting deeper than MaxDepth, naming where.
func scan(src []byte) error {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	type level struct {
		array bool
		index int
		key   string
		want  bool // an object waiting for its next key
	}
	var stack []level
	path := func() string {
		var b strings.Builder
		b.WriteString("$")
		for _, l := range stack {
			if l.array {
				fmt.Fprintf(&b, "[%d]", l.index)
			} else if !l.want {
				b.WriteString(pathKey(l.key))
			}
		}
		return b.String()
	}
	// value notes a value ended in the current level.
	value := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].index++
			} else {
				stack[n-1].want = true
			}
		}
	}
	seen := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if !seen {
				return &PathError{Path: "$", Msg: "not JSON: the file is empty"}
			}
			return nil
		}
		if err != nil {
			return &PathError{Path: path(), Msg: "not JSON: " + err.Error()}
		}
		if len(stack) == 0 && seen {
			return &PathError{Path: "$", Msg: "not JSON: more than one value"}
		}
		seen = true
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) >= MaxDepth {
					return &PathError{Path: path(), Msg: fmt.Sprintf("nested deeper than %d levels", MaxDepth)}
				}
				stack = append(stack, level{array: t == '[', want: t == '{'})
			default:
				stack = stack[:len(stack)-1]
				value()
			}
		case string:
			if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].want {
				stack[n-1].key, stack[n-1].want = t, false
				continue
			}
			value()
		default:
			value()
		}
	}
}

// pathKey is a key's step in a JSON path: ".name", or `["a b"]` for a key
// that is not an identifier.
func pathKey(k string) string {
	if isIdent(k) {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}
