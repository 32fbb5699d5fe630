// Package payload serves the user's own data instead of the meteorites
// (--payload FILE): a JSON sample of one of their responses, maybe
// gzipped: an array of objects (the items of the list), an object whose
// array of objects under one key is the list (--items KEY; the answers
// keep the object around it), or one object (one item).
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
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
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

// sample is a sample file split into its items.
type sample struct {
	items []json.RawMessage
	// array is set for a sample that is an array of items.
	array bool
	// wrap is set for items under one key of an object (a wrapped list):
	// the object's keys in order, their values, and which one holds the
	// items.
	wrap *wrapper
	// notes say how the sample was read (the items' key found by itself).
	notes []string
}

// wrapper is the object around a wrapped list.
type wrapper struct {
	keys  []string
	vals  []json.RawMessage
	index int // keys[index] holds the items
}

// Key is the items' key.
func (w *wrapper) Key() string { return w.keys[w.index] }

// itemPath is item i's JSON path.
func (s *sample) itemPath(i int) string {
	switch {
	case s.wrap != nil:
		return "$" + pathKey(s.wrap.Key()) + "[" + strconv.Itoa(i) + "]"
	case s.array:
		return "$[" + strconv.Itoa(i) + "]"
	}
	return "$"
}

// WholeObject is the --items value that takes a sample object as one
// item even when one of its keys holds an array of objects.
const WholeObject = "$"

// gzipMagic starts a gzip stream: a sample may be kept compressed.
var gzipMagic = []byte{0x1f, 0x8b}

// readSample reads a sample file within MaxSampleBytes (a gzipped file
// within MaxSampleBytes once inflated), checks it is JSON within
// MaxDepth, and splits it into its items' raw JSON, each an object: the
// elements of an array; the array under the key items names (or, with no
// key named, under the only key of an object that holds an array of
// objects); or the object itself.
func readSample(file, items string) (*sample, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, &PathError{File: file, Path: "$", Msg: err.Error()}
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if head, _ := br.Peek(2); bytes.Equal(head, gzipMagic) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &PathError{File: file, Path: "$", Msg: "not gzip: " + err.Error()}
		}
		defer zr.Close()
		r = zr
	}
	src, err := io.ReadAll(io.LimitReader(r, MaxSampleBytes+1))
	if err != nil {
		return nil, &PathError{File: file, Path: "$", Msg: err.Error()}
	}
	s, err := splitSample(src, items)
	if err != nil {
		var pe *PathError
		if errors.As(err, &pe) {
			pe.File = file
		}
		return nil, err
	}
	return s, nil
}

// splitSample checks src and splits it into its items (see readSample).
func splitSample(src []byte, itemsKey string) (*sample, error) {
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
		return splitObject(src, itemsKey)
	case '[':
		if itemsKey != "" && itemsKey != WholeObject {
			return nil, &PathError{Path: "$", Msg: fmt.Sprintf("--items %s names a key of an object, and the sample is an array (of the items)", itemsKey)}
		}
	default:
		return nil, &PathError{Path: "$", Msg: "the sample must be an array of objects or one object, not " + JSONKind(src[0])}
	}
	items, err := splitArray(src, "$")
	if err != nil {
		return nil, err
	}
	return &sample{items: items, array: true}, nil
}

// splitArray splits src, an array at path, into its elements, each an
// object.
func splitArray(src []byte, path string) ([]json.RawMessage, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(src, &items); err != nil {
		return nil, &PathError{Path: path, Msg: "not JSON: " + err.Error()}
	}
	if len(items) == 0 {
		return nil, &PathError{Path: path, Msg: "an empty array: no item to serve or to derive a schema from"}
	}
	for i, it := range items {
		it = bytes.TrimSpace(it)
		items[i] = it
		if it[0] == '[' {
			return nil, &PathError{Path: path + "[" + strconv.Itoa(i) + "]", Msg: "an array of arrays: the items must be objects"}
		}
		if it[0] != '{' {
			return nil, &PathError{Path: path + "[" + strconv.Itoa(i) + "]", Msg: "an item must be an object, not " + JSONKind(it[0])}
		}
	}
	return items, nil
}

// splitObject splits a sample object: the items under itemsKey; with no
// key named, under its only key holding an array of objects, said in a
// note; else the object is one item.
func splitObject(src []byte, itemsKey string) (*sample, error) {
	w, err := objectKeys(src)
	if err != nil {
		return nil, err
	}
	one := &sample{items: []json.RawMessage{src}}
	if itemsKey == WholeObject {
		return one, nil
	}
	if itemsKey != "" {
		i := slices.Index(w.keys, itemsKey)
		if i < 0 {
			return nil, &PathError{Path: "$", Msg: fmt.Sprintf("--items %s: the sample object has no such key (its keys: %s)", itemsKey, strings.Join(w.keys, ", "))}
		}
		if what := arrayOfObjects(w.vals[i]); what != "" {
			return nil, &PathError{Path: "$" + pathKey(itemsKey), Msg: fmt.Sprintf("--items %s: it holds %s, not an array of objects", itemsKey, what)}
		}
		w.index = i
	} else {
		var lists []int
		for i, v := range w.vals {
			if arrayOfObjects(v) == "" {
				lists = append(lists, i)
			}
		}
		switch len(lists) {
		case 0:
			return one, nil
		case 1:
			w.index = lists[0]
			one.notes = []string{fmt.Sprintf("the items are the array under %q, the only key holding an array of objects; the answers keep the object around them (--items '%s' takes the whole object as one item)", w.Key(), WholeObject)}
		default:
			names := make([]string, len(lists))
			for j, i := range lists {
				names[j] = w.keys[i]
			}
			one.notes = []string{fmt.Sprintf("the sample object is served as one item: %s each hold an array of objects (--items KEY serves one of them as the list)", strings.Join(names, ", "))}
			return one, nil
		}
	}
	items, err := splitArray(w.vals[w.index], "$"+pathKey(w.Key()))
	if err != nil {
		return nil, err
	}
	s := &sample{items: items, wrap: w, notes: one.notes}
	if itemsKey != "" {
		s.notes = nil
	}
	return s, nil
}

// objectKeys reads the keys of src, an object, in order, and their values.
func objectKeys(src []byte) (*wrapper, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	if _, err := dec.Token(); err != nil { // {
		return nil, &PathError{Path: "$", Msg: "not JSON: " + err.Error()}
	}
	w := &wrapper{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, &PathError{Path: "$", Msg: "not JSON: " + err.Error()}
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, &PathError{Path: "$" + pathKey(k.(string)), Msg: "not JSON: " + err.Error()}
		}
		if slices.Contains(w.keys, k.(string)) {
			return nil, &PathError{Path: "$" + pathKey(k.(string)), Msg: "a key given twice"}
		}
		w.keys, w.vals = append(w.keys, k.(string)), append(w.vals, v)
	}
	return w, nil
}

// arrayOfObjects is "" when v is a non-empty array of objects, else what
// it is.
func arrayOfObjects(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if v[0] != '[' {
		return JSONKind(v[0])
	}
	var elems []json.RawMessage
	if json.Unmarshal(v, &elems) != nil || len(elems) == 0 {
		return "an empty array"
	}
	for _, e := range elems {
		if e = bytes.TrimSpace(e); e[0] != '{' {
			return "an array of which one element is " + JSONKind(e[0])
		}
	}
	return ""
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
