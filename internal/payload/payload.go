package payload

import (
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
	// Warnings name the fields derived as google.protobuf.Value.
	Warnings []string
	// Files holds the payload's service file and every file it imports,
	// for server reflection; Service is the payload's service.
	Files   *protoregistry.Files
	Service protoreflect.ServiceDescriptor

	item  *msgType
	slice reflect.Type  // []T
	base  reflect.Value // []T: the sample's items

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
	for i := range items.Len() {
		if buf, err = items.AppendItem(buf[:0], i); err != nil {
			return err
		}
		p.maxItem = max(p.maxItem, len(buf))
	}
	p.avgItem = len(b) / items.Len()
	for i := range items.Len() {
		js, err := json.Marshal(items.ItemJSON(i))
		if err != nil {
			return err
		}
		p.maxJSON = max(p.maxJSON, len(js))
	}
	return nil
}

// MaxItemJSON is the longest item's JSON, in bytes.
func (p *Payload) MaxItemJSON() int { return p.maxJSON }

// Args are the serve flags that serve this payload.
func (p *Payload) Args() []string {
	args := []string{"--payload", p.File}
	if p.Source.Schema != "" {
		args = append(args, "--schema", p.Source.Schema, "--message", p.Source.Message)
	}
	return args
}

// MaxItemBytes is the longest item's encoding with its key and length:
// what to have room for before appending one.
func (p *Payload) MaxItemBytes() int { return p.maxItem + 1 + 10 }

// ItemBytes is the mean item's encoding with its key and length.
func (p *Payload) ItemBytes() int { return p.avgItem }

// Items is n items of a payload, typed ([]T), read-only.
type Items struct {
	p    *Payload
	v    reflect.Value
	data unsafe.Pointer
	n    int
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
	return Items{p: p, v: v, data: v.UnsafePointer(), n: v.Len()}
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

// AppendList appends the list message of the items.
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
	return b, nil
}

// NewList is a new, empty *[]T for a JSON codec to decode a list into;
// Decoded makes Items of it.
func (p *Payload) NewList() any { return reflect.New(p.slice).Interface() }

// Decoded is the items a JSON codec decoded into v, from NewList.
func (p *Payload) Decoded(v any) Items { return p.items(reflect.ValueOf(v).Elem()) }

// NewItem is a new *T for a JSON codec to decode an item into.
func (p *Payload) NewItem() any { return reflect.New(p.item.typ).Interface() }

// DecodeList decodes a list message. Its items are counted first, so
// their slice is made once, at its size.
func (p *Payload) DecodeList(b []byte) (Items, error) {
	n := 0
	if err := eachBytes(b, 1, func([]byte) error { n++; return nil }); err != nil {
		return Items{}, fmt.Errorf("malformed protobuf: %w", err)
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
