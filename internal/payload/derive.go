package payload

// Deriving a protobuf schema from a sample: objects become messages
// (nested objects nested messages), arrays repeated fields, integers int64,
// other numbers double, booleans bool, strings string, RFC 3339 date-times
// google.protobuf.Timestamp. A field missing or null in some items is
// optional; a field whose JSON type differs between items (or an array of
// mixed or nested arrays) becomes google.protobuf.Value, with a warning
// naming it. Keys that are not protobuf identifiers get a valid field name
// and keep their key as json_name.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// JSON types a value can have, as bits.
const (
	tBool = 1 << iota
	tInt
	tDouble
	tString
	tTime
	tObject
	tArray
)

// shape is what the sample's values at one place have in common.
type shape struct {
	path    string // where it was first seen, for messages
	types   int    // the tX seen
	null    bool   // null seen
	present int    // values seen that were not null
	obj     *objShape
	elem    *shape // the elements of arrays
}

// objShape is the merged shape of objects at one place.
type objShape struct {
	count  int // objects merged
	keys   []string
	fields map[string]*shape
}

// node is a decoded JSON value that keeps its objects' key order:
// *object, []node, json.Number, string, bool or nil.
type node any

type object struct {
	keys []string
	vals []node
}

// decodeOrdered decodes one JSON value keeping key order.
func decodeOrdered(dec *json.Decoder) (node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	if d == '[' {
		var out []node
		for dec.More() {
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		_, err := dec.Token()
		return out, err
	}
	o := &object{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		v, err := decodeOrdered(dec)
		if err != nil {
			return nil, err
		}
		o.keys, o.vals = append(o.keys, k.(string)), append(o.vals, v)
	}
	_, err = dec.Token()
	return o, err
}

// merge adds value v, found at path, to s.
func (s *shape) merge(v node, path string) {
	if s.path == "" {
		s.path = path
	}
	switch v := v.(type) {
	case nil:
		s.null = true
		return
	case bool:
		s.types |= tBool
	case json.Number:
		if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			s.types |= tInt
		} else {
			s.types |= tDouble
		}
	case string:
		if _, err := time.Parse(time.RFC3339Nano, v); err == nil {
			s.types |= tTime
		} else {
			s.types |= tString
		}
	case *object:
		s.types |= tObject
		if s.obj == nil {
			s.obj = &objShape{fields: map[string]*shape{}}
		}
		s.obj.merge(v, path)
	case []node:
		s.types |= tArray
		if s.elem == nil {
			s.elem = &shape{}
		}
		for i, e := range v {
			s.elem.merge(e, path+"["+strconv.Itoa(i)+"]")
		}
	}
	s.present++
}

func (o *objShape) merge(v *object, path string) {
	o.count++
	for i, k := range v.keys {
		f := o.fields[k]
		if f == nil {
			f = &shape{}
			o.fields[k] = f
			o.keys = append(o.keys, k)
		}
		f.merge(v.vals[i], path+pathKey(k))
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// jsonTypes names the JSON types seen, for a warning.
func jsonTypes(t int) string {
	var out []string
	for _, x := range []struct {
		bits int
		name string
	}{{tBool, "boolean"}, {tInt | tDouble, "number"}, {tString | tTime, "string"}, {tObject, "object"}, {tArray, "array"}} {
		if t&x.bits != 0 {
			out = append(out, x.name)
		}
	}
	return strings.Join(out, ", ")
}

// mixed reports whether more than one JSON type was seen (int and double
// are one, number; date-times and other strings are one, string).
func mixed(t int) bool {
	n := 0
	for _, bits := range []int{tBool, tInt | tDouble, tString | tTime, tObject, tArray} {
		if t&bits != 0 {
			n++
		}
	}
	return n > 1
}

// Derived is a schema derived from a sample: the .proto text and the
// warnings (fields served as google.protobuf.Value).
type Derived struct {
	Proto    string
	Warnings []string
}

// derive derives the schema of items (each an object's JSON) from file.
func derive(file string, items [][]byte) (*Derived, error) {
	root := &objShape{fields: map[string]*shape{}}
	for i, raw := range items {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		v, err := decodeOrdered(dec)
		if err != nil && err != io.EOF {
			return nil, &PathError{File: file, Path: "$[" + strconv.Itoa(i) + "]", Msg: "not JSON: " + err.Error()}
		}
		root.merge(v.(*object), "$["+strconv.Itoa(i)+"]")
	}
	p := &printer{file: file, imports: map[string]bool{}}
	var body strings.Builder
	if err := p.message(&body, "Item", root, ""); err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// Derived by meteorbench from %s (%s).\n", baseName(file), plural(len(items), "item"))
	b.WriteString("syntax = \"proto3\";\n\npackage " + Package + ";\n\n")
	for _, imp := range []string{timestampProto, structProto} {
		if p.imports[imp] {
			fmt.Fprintf(&b, "import %q;\n", imp)
		}
	}
	if len(p.imports) > 0 {
		b.WriteString("\n")
	}
	b.WriteString(body.String())
	b.WriteString(serviceText("Item"))
	return &Derived{Proto: b.String(), Warnings: p.warnings}, nil
}

const (
	timestampProto = "google/protobuf/timestamp.proto"
	structProto    = "google/protobuf/struct.proto"
)

// printer writes the derived messages.
type printer struct {
	file     string
	imports  map[string]bool
	warnings []string
}

// message writes message name for the objects of o, indented.
func (p *printer) message(b *strings.Builder, name string, o *objShape, indent string) error {
	fmt.Fprintf(b, "%smessage %s {\n", indent, name)
	names := map[string]bool{}
	jsonNames := map[string]bool{} // protoc refuses two fields whose default JSON names differ only in case
	var nested []func() error
	for i, k := range o.keys {
		f := o.fields[k]
		field := fieldName(k)
		for n := 2; names[field] || jsonNames[strings.ToLower(defaultJSONName(field))]; n++ {
			field = fieldName(k) + strconv.Itoa(n)
		}
		names[field], jsonNames[strings.ToLower(defaultJSONName(field))] = true, true
		typ, label, obj, err := p.fieldType(f, o)
		if err != nil {
			return err
		}
		if obj != nil { // a nested message
			typ = uniqueName(messageName(field), names)
			sub, in := typ, indent+"  "
			nested = append(nested, func() error { return p.message(b, sub, obj, in) })
		}
		opt := ""
		if defaultJSONName(field) != k {
			opt = fmt.Sprintf(" [json_name = %s]", strconv.Quote(k))
		}
		fmt.Fprintf(b, "%s  %s%s %s = %d%s;\n", indent, label, typ, field, i+1, opt)
	}
	for _, n := range nested {
		if err := n(); err != nil {
			return err
		}
	}
	fmt.Fprintf(b, "%s}\n", indent)
	return nil
}

// fieldType is a field's type and label ("optional ", "repeated "), or
// the objects of its nested message, which the caller names.
func (p *printer) fieldType(f *shape, parent *objShape) (typ, label string, obj *objShape, err error) {
	s := f
	if f.types == tArray {
		label = "repeated "
		s = f.elem
		if s.types == 0 {
			return "", "", nil, &PathError{File: p.file, Path: f.path, Msg: "an empty array in every item: no element type to derive (give --schema)"}
		}
		if s.null || mixed(s.types) || s.types == tArray {
			return p.value(f.path, "its elements are "+elemKinds(s)), label, nil, nil
		}
	} else if mixed(f.types) {
		return p.value(f.path, "its values are "+jsonTypes(f.types)), "", nil, nil
	}
	if s.types == 0 {
		return "", "", nil, &PathError{File: p.file, Path: f.path, Msg: "null in every item: no type to derive (give --schema)"}
	}
	if s.types == tObject {
		return "", label, s.obj, nil
	}
	if label == "" && (f.null || f.present < parent.count) && f.types != tTime {
		label = "optional "
	}
	switch {
	case s.types == tBool:
		return "bool", label, nil, nil
	case s.types == tInt:
		return "int64", label, nil, nil
	case s.types&^(tInt|tDouble) == 0:
		return "double", label, nil, nil
	case s.types == tTime:
		p.imports[timestampProto] = true
		return "google.protobuf.Timestamp", label, nil, nil
	}
	return "string", label, nil, nil // strings, some of them date-times
}

func elemKinds(s *shape) string {
	k := jsonTypes(s.types)
	if s.null {
		k += ", null"
	}
	return strings.TrimPrefix(k, ", ")
}

// value is the type of a field of mixed types, with its warning.
func (p *printer) value(path, why string) string {
	p.imports[structProto] = true
	p.warnings = append(p.warnings, fmt.Sprintf("payload %s: %s: %s, so it is served as google.protobuf.Value", p.file, path, why))
	return "google.protobuf.Value"
}

// fieldName is a valid protobuf field name for key k.
func fieldName(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
		} else if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
			b.WriteByte('_')
		}
	}
	s := strings.TrimSuffix(b.String(), "_")
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		s = "f_" + s
	}
	return strings.TrimSuffix(s, "_")
}

// messageName is the name of the nested message of field f: CamelCase.
func messageName(f string) string {
	s := defaultJSONName(strings.TrimLeft(f, "_"))
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return "M" + s
	}
	if c := s[0]; c >= 'a' && c <= 'z' {
		s = string(c-('a'-'A')) + s[1:]
	}
	return s
}

// uniqueName is name, or name with a number, not yet in names (which it
// joins).
func uniqueName(name string, names map[string]bool) string {
	n := name
	for i := 2; names[n]; i++ {
		n = name + strconv.Itoa(i)
	}
	names[n] = true
	return n
}

// defaultJSONName is protoc's JSON name of a field: lowerCamelCase, an
// underscore dropped and the next letter upper-cased.
func defaultJSONName(field string) string {
	var b strings.Builder
	up := false
	for i := 0; i < len(field); i++ {
		c := field[i]
		if c == '_' {
			up = true
			continue
		}
		if up && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		b.WriteByte(c)
	}
	return b.String()
}
