package payload

// Deriving a protobuf schema from a sample: objects become messages
// (nested objects nested messages), arrays repeated fields, integers int64
// (uint64 beyond int64, a string beyond uint64: the JSON stays a number),
// other numbers double, booleans bool, strings string, RFC 3339 date-times
// in UTC google.protobuf.Timestamp (others stay strings, as written). A field missing or null in some items is
// optional; a field whose JSON type differs between items (or an array of
// mixed or nested arrays), a field null in every item and an array empty
// in every item become google.protobuf.Value, with a warning naming them.
// Keys that are not protobuf identifiers get a valid field name and keep
// their key as json_name.
//
// A field whose key is in every item is written even when it holds
// nothing (null, []), as the sample writes it; one missing from some items
// is left out then.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// JSON types a value can have, as bits.
const (
	tBool   = 1 << iota
	tInt    // an integer within int64
	tUint   // an integer beyond int64, within uint64
	tBigInt // an integer beyond both
	tDouble // a number with a fraction or an exponent
	tString
	tTime
	tObject
	tArray

	tNumber  = tInt | tUint | tBigInt | tDouble
	tInteger = tInt | tUint | tBigInt
)

// shape is what the sample's values at one place have in common.
type shape struct {
	path    string // where it was first seen, for messages
	types   int    // the tX seen
	null    bool   // null seen
	present int    // values seen that were not null
	keyed   int    // values seen, null or not
	neg     bool   // a negative integer seen
	inexact bool   // an integer beyond 2^53 seen (not exact as a double)
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
	s.keyed++
	switch v := v.(type) {
	case nil:
		s.null = true
		return
	case bool:
		s.types |= tBool
	case json.Number:
		s.number(string(v))
	case string:
		// A date-time is a Timestamp when it comes back as it is: in UTC,
		// its fraction as short as can be (as time.Time writes JSON).
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil && t.UTC().Format(time.RFC3339Nano) == v {
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

// number adds a number, written as n, to s.
func (s *shape) number(n string) {
	if strings.ContainsAny(n, ".eE") {
		s.types |= tDouble
		return
	}
	s.neg = s.neg || n[0] == '-'
	const exact = 1 << 53
	if i, err := strconv.ParseInt(n, 10, 64); err == nil {
		s.types |= tInt
		s.inexact = s.inexact || i > exact || i < -exact
	} else if _, err := strconv.ParseUint(n, 10, 64); err == nil {
		s.types |= tUint
		s.inexact = true
	} else {
		s.types |= tBigInt
		s.inexact = true
	}
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
	}{{tBool, "boolean"}, {tNumber, "number"}, {tString | tTime, "string"}, {tObject, "object"}, {tArray, "array"}} {
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
	for _, bits := range []int{tBool, tNumber, tString | tTime, tObject, tArray} {
		if t&bits != 0 {
			n++
		}
	}
	return n > 1
}

// Derived is a schema derived from a sample: the .proto text, the
// warnings (fields served as google.protobuf.Value, numbers' types) and
// notes (where the items were found).
type Derived struct {
	Proto    string
	Warnings []string
	Notes    []string

	// written are the fields (by full name) whose key every item has:
	// written even when empty, as null or []. numbers are the string
	// fields that hold integers beyond 64 bits, written as JSON numbers.
	written, numbers map[protoreflect.FullName]bool
}

// decodeItem decodes one item keeping its key order.
func decodeItem(file, path string, raw []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil && err != io.EOF {
		return nil, &PathError{File: file, Path: path, Msg: "not JSON: " + err.Error()}
	}
	return v.(*object), nil
}

// derive derives the schema of the sample's items (each an object's
// JSON), and of the object around them if any, from file.
func derive(file string, s *sample) (*Derived, error) {
	root := &objShape{fields: map[string]*shape{}}
	for i, raw := range s.items {
		o, err := decodeItem(file, s.itemPath(i), raw)
		if err != nil {
			return nil, err
		}
		root.merge(o, s.itemPath(i))
	}
	p := &printer{file: file, imports: map[string]bool{}, written: map[protoreflect.FullName]bool{}, numbers: map[protoreflect.FullName]bool{}}
	var body strings.Builder
	if err := p.message(&body, "Item", Package+".Item", root, "", ""); err != nil {
		return nil, err
	}
	if w := s.wrap; w != nil {
		// The object around the items: message List, its items field 1.
		list := &objShape{fields: map[string]*shape{}}
		wo := &object{}
		for i, k := range w.keys {
			var v node = []node{}
			if i != w.index {
				o, err := decodeItem(file, "$"+pathKey(k), append(append([]byte(`{"k":`), w.vals[i]...), '}'))
				if err != nil {
					return nil, err
				}
				v = o.vals[0]
			}
			wo.keys, wo.vals = append(wo.keys, k), append(wo.vals, v)
		}
		list.merge(wo, "$")
		body.WriteString("\n// The object around the items, as the sample has it.\n")
		if err := p.message(&body, "List", Package+".List", list, "", w.Key()); err != nil {
			return nil, err
		}
	}
	var b strings.Builder
	where := ""
	if s.wrap != nil {
		where = " under " + strconv.Quote(s.wrap.Key())
	}
	fmt.Fprintf(&b, "// Derived by meteorbench from %s (%s%s).\n", baseName(file), plural(len(s.items), "item"), where)
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
	b.WriteString(serviceText("Item", s.wrap == nil))
	return &Derived{Proto: b.String(), Warnings: p.warnings, Notes: s.notes, written: p.written, numbers: p.numbers}, nil
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
	written  map[protoreflect.FullName]bool
	numbers  map[protoreflect.FullName]bool
}

// message writes message name (full name full) for the objects of o,
// indented. The field of key items, if named, is the list of the items,
// field 1; the others are numbered after it.
func (p *printer) message(b *strings.Builder, name, full string, o *objShape, indent, items string) error {
	fmt.Fprintf(b, "%smessage %s {\n", indent, name)
	names := map[string]bool{}
	jsonNames := map[string]bool{} // protoc refuses two fields whose default JSON names differ only in case
	var nested []func() error
	num := 1
	if items != "" {
		num = 2
	}
	for _, k := range o.keys {
		f := o.fields[k]
		field := fieldName(k)
		for n := 2; names[field] || jsonNames[strings.ToLower(defaultJSONName(field))]; n++ {
			field = fieldName(k) + strconv.Itoa(n)
		}
		names[field], jsonNames[strings.ToLower(defaultJSONName(field))] = true, true
		fn := protoreflect.FullName(full + "." + field)
		if f.keyed == o.count {
			p.written[fn] = true
		} else if f.null && k != items {
			p.warn(f.path, "null in some items and missing in others: protobuf has one \"not set\" for both, so its nulls are served as missing ('schema --check' lists them)")
		}
		opt := ""
		if defaultJSONName(field) != k {
			opt = fmt.Sprintf(" [json_name = %s]", strconv.Quote(k))
		}
		if k == items && items != "" {
			fmt.Fprintf(b, "%s  repeated .%s.Item %s = 1%s;\n", indent, Package, field, opt)
			continue
		}
		typ, label, obj, err := p.fieldType(f, o)
		if err != nil {
			return err
		}
		if elem := f; typ == "string" {
			if f.types == tArray {
				elem = f.elem
			}
			if elem.types != 0 && elem.types&^tInteger == 0 {
				p.numbers[fn] = true // integers beyond 64 bits: still JSON numbers
			}
		}
		if obj != nil { // a nested message
			typ = uniqueName(messageName(field), names)
			sub, in := typ, indent+"  "
			nested = append(nested, func() error { return p.message(b, sub, full+"."+sub, obj, in, "") })
		}
		fmt.Fprintf(b, "%s  %s%s %s = %d%s;\n", indent, label, typ, field, num, opt)
		num++
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
		if s.types == 0 && !s.null {
			return p.value(f.path, "an empty array in every item (no element to derive a type from)"), label, nil, nil
		}
		if s.null || mixed(s.types) || s.types == tArray {
			why := "its elements are " + elemKinds(s)
			if s.inexact && mixed(s.types) {
				why += " (its integers beyond 2^53 are not exact in a google.protobuf.Value, a double)"
			}
			return p.value(f.path, why), label, nil, nil
		}
	} else if mixed(f.types) {
		why := "its values are " + jsonTypes(f.types)
		if f.inexact {
			why += " (its integers beyond 2^53 are not exact in a google.protobuf.Value, a double)"
		}
		return p.value(f.path, why), "", nil, nil
	}
	if s.types == 0 {
		return p.value(f.path, "null in every item (no value to derive a type from)"), "", nil, nil
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
	case s.types&^(tInt|tUint) == 0 && !s.neg:
		p.warn(f.path, "integers beyond int64 (up to 2^64-1), so it is uint64")
		return "uint64", label, nil, nil
	case s.types&^tInteger == 0:
		p.warn(f.path, "integers beyond int64 and uint64 together, so it is a string (written as a JSON number)")
		return "string", label, nil, nil
	case s.types&^tNumber == 0:
		if s.types&tInteger != 0 {
			why := "integers and fractions, so it is double"
			if s.inexact {
				why += "; its integers beyond 2^53 are not exact as a double"
			}
			p.warn(f.path, why)
		}
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
	p.warn(path, why+", so it is served as google.protobuf.Value")
	return "google.protobuf.Value"
}

// warn adds a warning about the field at path.
func (p *printer) warn(path, msg string) {
	p.warnings = append(p.warnings, fmt.Sprintf("payload %s: %s: %s", p.file, path, msg))
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
