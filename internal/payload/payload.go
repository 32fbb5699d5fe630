package payload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"unsafe"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Payload is a sample ready to serve: its item type, its items, and the
// schema the server's reflection describes. It is read-only once loaded
// and shared by every request.
type Payload struct {
	// Name is the sample's file name ("orders.json"); Hash a hash of the
	// schema and the data (12 hex digits). ID joins them.
	Name, Hash string
	// File is the sample's path and Source where its schema came from, as
	// Load was given them.
	File   string
	Source Options
	// Proto is the derived schema's .proto text ("" with --schema).
	Proto string
	// Warnings name the fields derived as google.protobuf.Value and the
	// numbers whose type was chosen for them; Notes say where the items
	// were found.
	Warnings, Notes []string
	// Files holds the payload's service file and every file it imports,
	// for server reflection; Service is the payload's service.
	Files   *protoregistry.Files
	Service protoreflect.ServiceDescriptor

	item  *msgType
	slice reflect.Type  // []T
	base  reflect.Value // []T: the sample's items

	// A wrapped list (items under a key of an object): list is the List
	// message, its items field list.fields[listAt], and wrap the sample's
	// object around the items (its items field empty).
	list   *msgType
	listAt int
	wrap   unsafe.Pointer
	// before and after are the List's fields before and after its items,
	// as struct types the JSON codecs encode (Around).
	before, after reflect.Type

	maxItem, avgItem int // the largest and mean item encoding, in bytes
	maxJSON          int // the largest item's JSON, in bytes

	mu   sync.Mutex
	long reflect.Value // the longest answer built from base so far
}

// Package and ServiceName name the payload's protobuf package and
// service; the service's methods are the contract's four, with the
// payload's messages.
const (
	Package     = "meteorbench.payload"
	ServiceName = Package + ".Payload"
)

// ID names the payload in a cell's condition: "orders.json@1a2b3c4d5e6f".
func (p *Payload) ID() string { return p.Name + "@" + p.Hash }

// Len is the number of items of the sample: the answer when no size is
// named.
func (p *Payload) Len() int { return p.base.Len() }

// Item is the item message's full name.
func (p *Payload) Item() protoreflect.FullName { return p.item.desc.FullName() }

func baseName(file string) string { return filepath.Base(file) }

// finish sets the payload's hash from its schema files and its items'
// encoding.
func (p *Payload) finish(schema []byte) error {
	h := sha256.New()
	h.Write(schema)
	b, err := p.Items(0).AppendList(nil)
	if err != nil {
		return err
	}
	h.Write(b)
	p.Hash = hex.EncodeToString(h.Sum(nil))[:12]
	items := p.Items(0)
	var buf []byte
	sum := 0
	for i := range items.Len() {
		if buf, err = items.AppendItem(buf[:0], i); err != nil {
			return err
		}
		p.maxItem = max(p.maxItem, len(buf))
		sum += len(buf)
	}
	p.avgItem = sum / items.Len()
	for i := range items.Len() {
		js, err := json.Marshal(items.ItemJSON(i))
		if err != nil {
			return err
		}
		p.maxJSON = max(p.maxJSON, len(js))
	}
	return nil
}

// setWrapped readies a wrapped list's types: its items at field listAt
// of the List message's type.
func (p *Payload) setWrapped(list *msgType, listAt int) {
	p.list, p.listAt = list, listAt
	lt := list.typ
	fields := func(from, to int) reflect.Type {
		fs := make([]reflect.StructField, 0, to-from)
		for i := from; i < to; i++ {
			fs = append(fs, lt.Field(i))
		}
		return reflect.StructOf(fs)
	}
	p.before, p.after = fields(0, listAt), fields(listAt+1, lt.NumField())
}

// ItemsKey is the key of the sample object whose array holds the items
// (a wrapped list), or "".
func (p *Payload) ItemsKey() string {
	if p.list == nil {
		return ""
	}
	return p.list.desc.Fields().ByNumber(1).JSONName()
}

// MaxItemJSON is the longest item's JSON, in bytes.
func (p *Payload) MaxItemJSON() int { return p.maxJSON }

// Args are the serve flags that serve this payload.
func (p *Payload) Args() []string {
	args := []string{"--payload", p.File}
	if p.Source.Schema != "" {
		args = append(args, "--schema", p.Source.Schema, "--message", p.Source.Message)
	}
	if p.Source.Items != "" {
		args = append(args, "--items", p.Source.Items)
	}
	return args
}

// MaxItemBytes is the longest item's encoding with its key and length:
// what to have room for before appending one.
func (p *Payload) MaxItemBytes() int { return p.maxItem + 1 + 10 }

// ItemBytes is the mean item's encoding with its key and length.
func (p *Payload) ItemBytes() int { return p.avgItem }

// Items is n items of a payload, typed ([]T), read-only; for a wrapped
// list, with the object around them (w, a List whose items field is not
// read).
type Items struct {
	p    *Payload
	v    reflect.Value
	data unsafe.Pointer
	n    int
	w    unsafe.Pointer
}

// Items returns an n-item answer: item i is the sample's item i mod Len
// (n = 0: the sample as it is). The first n items of a longer answer are
// the n-item answer.
func (p *Payload) Items(n int) Items {
	if n <= 0 {
		n = p.Len()
	}
	v := p.base
	if n > v.Len() {
		v = p.longer(n)
	}
	return p.items(v.Slice(0, n))
}

func (p *Payload) items(v reflect.Value) Items {
	return Items{p: p, v: v, data: v.UnsafePointer(), n: v.Len(), w: p.wrap}
}

// longer returns an answer of at least n items, built once per doubling.
func (p *Payload) longer(n int) reflect.Value {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.long.IsValid() && p.long.Len() >= n {
		return p.long
	}
	size := max(n, 2*p.base.Len())
	if p.long.IsValid() {
		size = max(n, 2*p.long.Len())
	}
	v := reflect.MakeSlice(p.slice, size, size)
	k := p.base.Len()
	for i := 0; i < size; i += k {
		reflect.Copy(v.Slice(i, min(i+k, size)), p.base)
	}
	p.long = v
	return v
}

// Len is the number of items.
func (it Items) Len() int { return it.n }

func (it Items) at(i int) unsafe.Pointer {
	return unsafe.Add(it.data, uintptr(i)*it.p.item.typ.Size())
}

// JSON is items i to j as a value the JSON codecs encode: a []T.
func (it Items) JSON(i, j int) any { return it.v.Slice(i, j).Interface() }

// List is the list answer as a value the JSON codecs encode: the items (a
// []T), or for a wrapped list the object around them (a *List).
func (it Items) List() any {
	if it.w == nil {
		return it.JSON(0, it.n)
	}
	w := reflect.New(it.p.list.typ)
	w.Elem().Set(reflect.NewAt(it.p.list.typ, it.w).Elem())
	w.Elem().Field(it.p.listAt).Set(it.v)
	return w.Interface()
}

// Around is the JSON of a wrapped list answer before and after its array
// of items, encoded with marshal: open is `{"meta":{...},"items":`
// and close `,"more":1}`. Both are nil for a list that is not wrapped.
func (it Items) Around(marshal func(any) ([]byte, error)) (open, close []byte, err error) {
	if it.w == nil {
		return nil, nil, nil
	}
	all := reflect.NewAt(it.p.list.typ, it.w).Elem()
	part := func(t reflect.Type, from int) ([]byte, error) {
		v := reflect.New(t).Elem()
		for i := range t.NumField() {
			v.Field(i).Set(all.Field(from + i))
		}
		return marshal(v.Interface())
	}
	before, err := part(it.p.before, 0)
	if err != nil {
		return nil, nil, err
	}
	after, err := part(it.p.after, it.p.listAt+1)
	if err != nil {
		return nil, nil, err
	}
	key, err := marshal(it.p.ItemsKey())
	if err != nil {
		return nil, nil, err
	}
	before, after = bytes.TrimSpace(before), bytes.TrimSpace(after)
	open = before[:len(before)-1] // without its }
	if len(before) > 2 {
		open = append(open, ',')
	}
	open = append(append(open, key...), ':')
	if len(after) > 2 {
		close = append([]byte{','}, after[1:]...)
	} else {
		close = []byte{'}'}
	}
	return open, close, nil
}

// ItemJSON is item i as a value the JSON codecs encode: a *T.
func (it Items) ItemJSON(i int) any { return it.v.Index(i).Addr().Interface() }

// AppendItem appends item i's protobuf encoding.
func (it Items) AppendItem(b []byte, i int) ([]byte, error) {
	return it.p.item.append(b, it.at(i))
}

// AppendEntry appends item i as an entry of the list message (field 1).
func (it Items) AppendEntry(b []byte, i int) ([]byte, error) {
	return appendNested(append(b, 0x0a), func(b []byte) ([]byte, error) { return it.AppendItem(b, i) })
}

// AppendDelimited appends item i with its length before it (a streamed
// record).
func (it Items) AppendDelimited(b []byte, i int) ([]byte, error) {
	return appendNested(b, func(b []byte) ([]byte, error) { return it.AppendItem(b, i) })
}

// AppendList appends the list message of the items (of a wrapped list:
// the items, field 1, then the other fields of the object around them).
func (it Items) AppendList(b []byte) ([]byte, error) {
	// Room for the items at their mean size, and a sixteenth more: a
	// list is then written without growing its buffer again and again.
	b = slices.Grow(b, it.n*it.p.avgItem+it.n*it.p.avgItem/16)
	var err error
	for i := range it.n {
		if b, err = it.AppendEntry(b, i); err != nil {
			return b, err
		}
	}
	if it.w != nil {
		return it.p.list.appendExcept(b, it.w, it.p.listAt)
	}
	return b, nil
}

// NewList is a new, empty list for a JSON codec to decode a list into (a
// *[]T, or a *List for a wrapped list); Decoded makes Items of it.
func (p *Payload) NewList() any {
	if p.list != nil {
		return reflect.New(p.list.typ).Interface()
	}
	return reflect.New(p.slice).Interface()
}

// Decoded is the items a JSON codec decoded into v, from NewList. A
// wrapped list's object is v's.
func (p *Payload) Decoded(v any) Items {
	rv := reflect.ValueOf(v)
	if p.list == nil {
		return p.items(rv.Elem())
	}
	it := p.items(rv.Elem().Field(p.listAt))
	it.w = rv.UnsafePointer()
	return it
}

// CheckDecoded says what is wrong with a decoded upload, v from NewList:
// a wrapped list with no array of items.
func (p *Payload) CheckDecoded(v any) error {
	if p.list != nil && reflect.ValueOf(v).Elem().Field(p.listAt).IsNil() {
		return fmt.Errorf("malformed JSON: the body must be an object with the items under %q", p.ItemsKey())
	}
	return nil
}

// NewItem is a new *T for a JSON codec to decode an item into.
func (p *Payload) NewItem() any { return reflect.New(p.item.typ).Interface() }

// DecodeList decodes a list message. Its items are counted first, so
// their slice is made once, at its size.
func (p *Payload) DecodeList(b []byte) (Items, error) {
	n := 0
	if err := eachBytes(b, 1, func([]byte) error { n++; return nil }); err != nil {
		return Items{}, fmt.Errorf("malformed protobuf: %w", err)
	}
	if p.list != nil {
		w := reflect.New(p.list.typ)
		w.Elem().Field(p.listAt).Set(reflect.MakeSlice(p.slice, 0, n))
		if err := p.list.unmarshal(b, w.UnsafePointer()); err != nil {
			return Items{}, fmt.Errorf("malformed protobuf: %w", err)
		}
		return p.Decoded(w.Interface()), nil
	}
	sp := reflect.New(p.slice)
	sp.Elem().Set(reflect.MakeSlice(p.slice, 0, n))
	f := field{num: 1, kind: kMessage, repeated: true, msg: p.item, slice: p.slice, elemSize: p.item.typ.Size()}
	err := eachBytes(b, 1, func(v []byte) error { return p.item.unmarshal(v, f.appendElem(sp.UnsafePointer())) })
	if err != nil {
		return Items{}, fmt.Errorf("malformed protobuf: %w", err)
	}
	return p.items(sp.Elem()), nil
}

// DecodeItem decodes one item message and returns it as a *T.
func (p *Payload) DecodeItem(b []byte) (any, error) {
	v := reflect.New(p.item.typ)
	if err := p.item.unmarshal(b, v.UnsafePointer()); err != nil {
		return nil, fmt.Errorf("malformed protobuf: %w", err)
	}
	return v.Interface(), nil
}

func newOf(m *msgType) unsafe.Pointer { return reflect.New(m.typ).UnsafePointer() }
