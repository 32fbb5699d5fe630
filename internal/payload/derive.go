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
	"slices"
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
	// rec is the object, an ancestor, whose message this place's objects
	// are: a recursive message (fold).
	rec *objShape
}

// objShape is the merged shape of objects at one place.
type objShape struct {
	count  int // objects merged
	keys   []string
	fields map[string]*shape
	// values are all the values of its keys, merged: a map's values.
	values *shape
	// isMap: the objects are a map<string, T> (classify).
	isMap bool
	// full is its message's full name, once printed.
	full string
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

// absorb merges the values of g, seen at another place, into s.
func (s *shape) absorb(g *shape) {
	if s == g || g == nil {
		return
	}
	s.types |= g.types
	s.null = s.null || g.null
	s.present += g.present
	s.keyed += g.keyed
	s.neg = s.neg || g.neg
	s.inexact = s.inexact || g.inexact
	switch {
	case g.obj == nil:
	case s.obj == nil:
		s.obj = g.obj
	default:
		s.obj.absorb(g.obj, "")
	}
	switch {
	case g.elem == nil:
	case s.elem == nil:
		s.elem = g.elem
	default:
		s.elem.absorb(g.elem)
	}
}

// absorb merges the objects of g into o; the values of key skip only as
// far as their counts (their objects are another level, absorbed apart).
func (o *objShape) absorb(g *objShape, skip string) {
	if o == g {
		return
	}
	o.count += g.count
	o.isMap = o.isMap || g.isMap
	if o.values == nil {
		o.values = g.values
	} else {
		o.values.absorb(g.values)
	}
	for _, k := range g.keys {
		f, gf := o.fields[k], g.fields[k]
		if f == nil {
			if k == skip {
				f = &shape{path: gf.path}
			} else {
				f = gf
			}
			o.fields[k] = f
			o.keys = append(o.keys, k)
			if k != skip {
				continue
			}
		}
		if k == skip {
			f.types |= gf.types
			f.null = f.null || gf.null
			f.present += gf.present
			f.keyed += gf.keyed
			continue
		}
		f.absorb(gf)
	}
}

// mapLike: objects whose keys are not identifiers (ids, dates, codes), or
// with many keys whose values are objects of one shape, are a map, as a
// person would write them: map<string, T>.
const mapKeys = 8

// classify decides, at every place, which objects are maps.
func (s *shape) classify() {
	if s == nil {
		return
	}
	if o := s.obj; o != nil && !o.isMap {
		o.isMap = o.looksLikeMap()
		for _, k := range o.keys {
			o.fields[k].classify()
		}
		if o.isMap {
			o.values.classify()
		}
	}
	s.elem.classify()
}

func (o *objShape) looksLikeMap() bool {
	if len(o.keys) == 0 || o.values == nil {
		return false
	}
	ids := true
	for _, k := range o.keys {
		if isIdent(k) {
			ids = false
			break
		}
	}
	if ids {
		return o.values.null || !mixed(o.values.types)
	}
	if len(o.keys) < mapKeys || o.values.types != tObject || o.values.null {
		return false
	}
	// One shape: every value's keys mostly the keys of all of them.
	all := len(o.values.obj.keys)
	for _, k := range o.keys {
		if f := o.fields[k]; len(f.obj.keys)*2 < all {
			return false
		}
	}
	return true
}

// How a field holds objects: as its value, as the elements of an array,
// as the values of a map.
const (
	asValue = iota
	asElems
	asMapValues
)

// place is where the objects of field f are, and how it holds them: f
// (an object), its elements (an array of objects), or a map's values;
// nil for none.
func place(f *shape) (*shape, int) {
	s, how := f, asValue
	if f.types == tArray && f.elem != nil {
		s, how = f.elem, asElems
	}
	if s.types != tObject || s.obj == nil {
		return nil, 0
	}
	if s.obj.isMap && how == asValue {
		return placeAs(f, asMapValues), asMapValues
	}
	return s, how
}

// placeAs is where the objects of field f are when it holds them as
// another level of a recursive message held them (how), or nil.
func placeAs(f *shape, how int) *shape {
	s := f
	switch how {
	case asElems:
		s = f.elem
	case asMapValues:
		if f.types != tObject || f.obj == nil {
			return nil
		}
		s = f.obj.values
	}
	if s == nil || s.types != tObject || s.obj == nil {
		return nil
	}
	return s
}

// fold makes objects that hold themselves (a tree: children of the same
// shape as their parent, at any depth) one recursive message: at every
// level below o down key k whose objects mostly have o's keys and k
// again, their fields are merged into o's, and the place refers to o.
func (o *objShape) fold(done map[*objShape]bool, notes *[]string) {
	if done[o] {
		return
	}
	done[o] = true
	for _, k := range o.keys {
		f := o.fields[k]
		pl, how := place(f)
		if pl == nil || pl.rec != nil || !o.holds(pl.obj, k) {
			continue
		}
		for lvl := pl.obj; lvl != nil && lvl != o; {
			o.absorb(lvl, k)
			next := lvl.fields[k]
			if next == nil {
				break
			}
			np := placeAs(next, how)
			if np == nil {
				break
			}
			lvl = np.obj
		}
		if how == asMapValues {
			f.obj.isMap = true // every level's map, whatever its keys
		}
		pl.rec = o
		if !slices.ContainsFunc(*notes, func(n string) bool { return strings.HasPrefix(pl.path, n) }) {
			*notes = append(*notes, pl.path) // not a level inside one noted
		}
	}
	for _, k := range o.keys {
		for s := o.fields[k]; s != nil; s = s.elem {
			if s.obj != nil && s.rec == nil {
				s.obj.fold(done, notes)
				if s.obj.values != nil && s.obj.values.obj != nil && s.obj.values.rec == nil {
					s.obj.values.obj.fold(done, notes)
				}
			}
		}
	}
}

// holds reports whether objects s, under o's key k, are o's again: they
// have key k too, and at least half their keys are o's.
func (o *objShape) holds(s *objShape, k string) bool {
	if s == o || s.fields[k] == nil {
		return false
	}
	in := 0
	for _, j := range s.keys {
		if o.fields[j] != nil {
			in++
		}
	}
	return in*2 >= len(s.keys)
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
	if o.values == nil {
		o.values = &shape{}
	}
	for i, k := range v.keys {
		o.values.merge(v.vals[i], path+"[*]")
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
	// bare are the wrapper messages whose JSON is their only field's.
	bare map[protoreflect.FullName]bool
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
	p := &printer{file: file, imports: map[string]bool{}, written: map[protoreflect.FullName]bool{}, numbers: map[protoreflect.FullName]bool{},
		bare: map[protoreflect.FullName]bool{}}
	var body strings.Builder
	var recursive []string
	done := map[*objShape]bool{}
	(&shape{types: tObject, obj: root}).classify()
	root.fold(done, &recursive)
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
		(&shape{types: tObject, obj: list}).classify()
		list.fold(done, &recursive)
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
	notes := s.notes
	for _, n := range []struct {
		at   []string
		what string
	}{
		{p.mapped, "objects whose keys are not identifiers (ids, dates, codes), or whose many values share one shape, are map<string, T>"},
		{p.wrapped, "arrays of arrays are repeated wrapper messages (named from the field, their JSON the inner array itself)"},
		{recursive, "objects that hold objects of their own shape are one recursive message"},
	} {
		if len(n.at) > 0 {
			notes = append(notes, fmt.Sprintf("%s: %s", n.what, strings.Join(firstFew(n.at), ", ")))
		}
	}
	return &Derived{Proto: b.String(), Warnings: p.warnings, Notes: notes, written: p.written, numbers: p.numbers, bare: p.bare}, nil
}

// firstFew is at most five of places, and how many more.
func firstFew(places []string) []string {
	if len(places) <= 5 {
		return places
	}
	return append(places[:5:5], fmt.Sprintf("and %d more", len(places)-5))
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
	// bare are the wrapper messages, whose JSON is their only field's.
	bare map[protoreflect.FullName]bool
	// mapped and wrapped are the places made maps and wrappers, for the
	// notes.
	mapped, wrapped []string
}

// message writes message name (full name full) for the objects of o,
// indented. The field of key items, if named, is the list of the items,
// field 1; the others are numbered after it.
func (p *printer) message(b *strings.Builder, name, full string, o *objShape, indent, items string) error {
	o.full = full
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
		typ, label, err := p.typeOf(b, f, o, field, full, names, indent, &nested)
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

// typeOf is the type and label of field (its values f, in message full,
// whose objects are parent), and the messages it needs nested, to print
// after the fields: a message for objects, a map's, a wrapper of an array
// of arrays.
func (p *printer) typeOf(b *strings.Builder, f *shape, parent *objShape, field, full string, names map[string]bool, indent string, nested *[]func() error) (typ, label string, err error) {
	s, label := f, ""
	if f.types == tArray && f.elem != nil && f.elem.types != 0 && !f.elem.null && !mixed(f.elem.types) {
		s, label = f.elem, "repeated "
	}
	if s.rec != nil {
		return "." + s.rec.full, label, nil
	}
	// nest prints a message for s, named from the field.
	nest := func(suffix string, print func(name, full, indent string) error) string {
		name := uniqueName(messageName(field)+suffix, names)
		in := indent + "  "
		*nested = append(*nested, func() error { return print(name, full+"."+name, in) })
		return name
	}
	switch {
	case label != "" && (s.types == tArray || s.types == tObject && s.obj.isMap):
		// An array of arrays (or of maps): a wrapper message each, its
		// JSON the array (map) itself.
		p.wrapped = append(p.wrapped, f.path)
		return nest("Elem", func(name, full, indent string) error { return p.wrapper(b, name, full, s, indent) }), label, nil
	case s.types == tObject && s.obj.isMap:
		if label == "" {
			p.mapped = append(p.mapped, f.path)
		}
		v := s.obj.values
		vt := ""
		switch {
		case v.rec != nil:
			vt = "." + v.rec.full
		case v.null || v.types == 0 || mixed(v.types):
			vt = p.value(v.path, "its values are "+elemKinds(v))
		case v.types == tObject && !v.obj.isMap:
			vt = nest("Value", func(name, full, indent string) error { return p.message(b, name, full, v.obj, indent, "") })
		case v.types == tArray || v.types == tObject:
			vt = nest("Value", func(name, full, indent string) error { return p.wrapper(b, name, full, v, indent) })
		default:
			if vt, _, _, err = p.fieldType(v, &objShape{count: v.present}); err != nil {
				return "", "", err
			}
		}
		return "map<string, " + vt + ">", "", nil
	}
	typ, label, obj, err := p.fieldType(f, parent)
	if err != nil || obj == nil {
		return typ, label, err
	}
	return nest("", func(name, full, indent string) error { return p.message(b, name, full, obj, indent, "") }), label, nil
}

// wrapper writes a message whose JSON is its only field's (bare), v: the
// elements of an array of arrays (each a wrapper), or maps in an array.
func (p *printer) wrapper(b *strings.Builder, name, full string, s *shape, indent string) error {
	p.bare[protoreflect.FullName(full)] = true
	what := "array"
	if s.types != tArray {
		what = "object"
	}
	fmt.Fprintf(b, "%s// Its JSON is the %s itself, not an object around it.\n%smessage %s {\n", indent, what, indent, name)
	var nested []func() error
	names := map[string]bool{"v": true}
	p.written[protoreflect.FullName(full+".v")] = true
	typ, label, err := p.typeOf(b, s, &objShape{count: s.present}, name, full, names, indent, &nested)
	if err != nil {
		return err
	}
	if typ == "string" && s.elem != nil && s.elem.types != 0 && s.elem.types&^tInteger == 0 {
		p.numbers[protoreflect.FullName(full+".v")] = true
	}
	fmt.Fprintf(b, "%s  %s%s v = 1;\n", indent, label, typ)
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
