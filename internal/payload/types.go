package payload

// Go types built at run time from message descriptors: one struct per
// message (reflect.StructOf), its fields tagged with their JSON names, and
// beside it the table the protobuf codec walks (encode.go, decode.go).
//
//	scalar            T (bool, int32, int64, uint32, uint64, float32, float64, string, []byte; enums int32)
//	optional scalar   *T
//	message           *S            repeated: []S
//	Timestamp         *time.Time    repeated: []time.Time
//	Value             any           repeated: []any

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"time"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// kind is how a field is encoded: its protobuf kind, or one of the two
// well-known messages the package maps to Go values.
type kind uint8

const (
	kBool kind = iota
	kInt32
	kSint32
	kSfixed32
	kInt64
	kSint64
	kSfixed64
	kUint32
	kFixed32
	kUint64
	kFixed64
	kFloat
	kDouble
	kString
	kBytes
	kMessage
	kTimestamp
	kValue
)

// field is one field of a message, as the codec walks it.
type field struct {
	num      protowire.Number
	kind     kind
	repeated bool
	ptr      bool // an optional scalar (*T)
	packed   bool // a repeated scalar written packed
	offset   uintptr
	tag      []byte // the field's key, wire type included (packed: bytes)
	msg      *msgType
	slice    reflect.Type // repeated: the slice type
	elemSize uintptr
}

// msgType is a message's Go type and codec table.
type msgType struct {
	desc   protoreflect.MessageDescriptor
	typ    reflect.Type // the struct
	fields []field
	byNum  []int16 // field number -> index in fields + 1; 0: unknown
	// arrays are the repeated fields written as [] when empty (Derived's
	// written): a decoded message's empty ones are made non-nil.
	arrays []int
	// key is the field answers are checked by (checkItem): the first
	// singular scalar field, or -1.
	key int
}

var (
	timeType   = reflect.TypeFor[time.Time]()
	anyType    = reflect.TypeFor[any]()
	numberType = reflect.TypeFor[number]()
)

// number is a string field holding an integer beyond 64 bits (derived from
// a sample's numbers): its JSON is the number, its protobuf the digits.
type number string

// MarshalJSON writes the number as it is.
func (n number) MarshalJSON() ([]byte, error) {
	if !json.Valid([]byte(n)) || n == "" || n[0] == '"' {
		return nil, fmt.Errorf("%q is not a JSON number", string(n))
	}
	return []byte(n), nil
}

// UnmarshalJSON reads a JSON number (or null, leaving n as it is).
func (n *number) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var v json.Number
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*n = number(v)
	return nil
}

const (
	timestampName = "google.protobuf.Timestamp"
	valueName     = "google.protobuf.Value"
)

// scalars are the codec kind, Go type and wire type (unpacked) of each
// scalar protobuf kind.
var scalars = map[protoreflect.Kind]struct {
	kind   kind
	goType reflect.Type
	wire   protowire.Type
}{
	protoreflect.BoolKind:     {kBool, reflect.TypeFor[bool](), protowire.VarintType},
	protoreflect.EnumKind:     {kInt32, reflect.TypeFor[int32](), protowire.VarintType},
	protoreflect.Int32Kind:    {kInt32, reflect.TypeFor[int32](), protowire.VarintType},
	protoreflect.Sint32Kind:   {kSint32, reflect.TypeFor[int32](), protowire.VarintType},
	protoreflect.Sfixed32Kind: {kSfixed32, reflect.TypeFor[int32](), protowire.Fixed32Type},
	protoreflect.Int64Kind:    {kInt64, reflect.TypeFor[int64](), protowire.VarintType},
	protoreflect.Sint64Kind:   {kSint64, reflect.TypeFor[int64](), protowire.VarintType},
	protoreflect.Sfixed64Kind: {kSfixed64, reflect.TypeFor[int64](), protowire.Fixed64Type},
	protoreflect.Uint32Kind:   {kUint32, reflect.TypeFor[uint32](), protowire.VarintType},
	protoreflect.Fixed32Kind:  {kFixed32, reflect.TypeFor[uint32](), protowire.Fixed32Type},
	protoreflect.Uint64Kind:   {kUint64, reflect.TypeFor[uint64](), protowire.VarintType},
	protoreflect.Fixed64Kind:  {kFixed64, reflect.TypeFor[uint64](), protowire.Fixed64Type},
	protoreflect.FloatKind:    {kFloat, reflect.TypeFor[float32](), protowire.Fixed32Type},
	protoreflect.DoubleKind:   {kDouble, reflect.TypeFor[float64](), protowire.Fixed64Type},
	protoreflect.StringKind:   {kString, reflect.TypeFor[string](), protowire.BytesType},
	protoreflect.BytesKind:    {kBytes, reflect.TypeFor[[]byte](), protowire.BytesType},
}

// builder builds the message types of one payload, each once.
type builder struct {
	types    map[protoreflect.FullName]*msgType
	building map[protoreflect.FullName]bool
	// written and numbers are Derived's: the fields written even when
	// empty, and the string fields written as JSON numbers.
	written, numbers map[protoreflect.FullName]bool
}

// build returns the type of message md.
func (b *builder) build(md protoreflect.MessageDescriptor) (*msgType, error) {
	if t := b.types[md.FullName()]; t != nil {
		return t, nil
	}
	if b.building[md.FullName()] {
		return nil, fmt.Errorf("message %s contains itself: recursive messages are not supported", md.FullName())
	}
	b.building[md.FullName()] = true
	defer delete(b.building, md.FullName())
	fds := md.Fields()
	m := &msgType{desc: md, key: -1}
	var sfs []reflect.StructField
	maxNum := 0
	for i := range fds.Len() {
		fd := fds.Get(i)
		f, gt, err := b.field(fd)
		if err != nil {
			return nil, err
		}
		name := "F" + strconv.Itoa(int(fd.Number()))
		tag := `json:"` + fd.JSONName()
		if (f.ptr || f.repeated || f.kind == kMessage || f.kind == kTimestamp || f.kind == kValue) && !b.written[fd.FullName()] {
			tag += ",omitempty"
		}
		if f.repeated && b.written[fd.FullName()] {
			m.arrays = append(m.arrays, i)
		}
		sfs = append(sfs, reflect.StructField{Name: name, Type: gt, Tag: reflect.StructTag(tag + `"`)})
		m.fields = append(m.fields, f)
		maxNum = max(maxNum, int(fd.Number()))
		if m.key < 0 && !f.repeated && !f.ptr && f.kind <= kString {
			m.key = i
		}
	}
	m.typ = reflect.StructOf(sfs)
	for i := range m.fields {
		m.fields[i].offset = m.typ.Field(i).Offset
	}
	if maxNum <= 1<<12 {
		m.byNum = make([]int16, maxNum+1)
		for i, f := range m.fields {
			m.byNum[f.num] = int16(i + 1)
		}
	} else {
		return nil, fmt.Errorf("message %s: field number %d is over the %d supported", md.FullName(), maxNum, 1<<12)
	}
	b.types[md.FullName()] = m
	return m, nil
}

// field is fd's codec entry and Go type.
func (b *builder) field(fd protoreflect.FieldDescriptor) (field, reflect.Type, error) {
	f := field{num: fd.Number(), repeated: fd.IsList()}
	if fd.IsMap() {
		return f, nil, fmt.Errorf("field %s: map fields are not supported", fd.FullName())
	}
	var gt reflect.Type
	var wt protowire.Type
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if fd.Kind() == protoreflect.GroupKind {
			return f, nil, fmt.Errorf("field %s: groups are not supported", fd.FullName())
		}
		wt = protowire.BytesType
		switch fd.Message().FullName() {
		case timestampName:
			f.kind, gt = kTimestamp, timeType
			if !f.repeated {
				gt = reflect.PointerTo(gt)
			}
		case valueName:
			f.kind, gt = kValue, anyType
		default:
			m, err := b.build(fd.Message())
			if err != nil {
				return f, nil, err
			}
			f.kind, f.msg, gt = kMessage, m, m.typ
			if !f.repeated {
				gt = reflect.PointerTo(gt)
			}
		}
	default:
		s, ok := scalars[fd.Kind()]
		if !ok {
			return f, nil, fmt.Errorf("field %s: kind %v is not supported", fd.FullName(), fd.Kind())
		}
		f.kind, gt, wt = s.kind, s.goType, s.wire
		if f.kind == kString && b.numbers[fd.FullName()] {
			gt = numberType
		}
	}
	switch {
	case f.repeated:
		f.slice = reflect.SliceOf(gt)
		f.elemSize = gt.Size()
		gt = f.slice
		if f.packed = fd.IsPacked() && wt != protowire.BytesType; f.packed {
			wt = protowire.BytesType
		}
	case fd.HasPresence() && f.kind < kMessage:
		f.ptr, gt = true, reflect.PointerTo(gt)
	}
	f.tag = protowire.AppendTag(nil, f.num, wt)
	return f, gt, nil
}

// sliceHeader is a slice's representation, for appending to a slice of a
// type built at run time.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// reserve makes the empty slice at p (of type f.slice) room for n
// elements.
func (f *field) reserve(p unsafe.Pointer, n int) {
	reflect.NewAt(f.slice, p).Elem().Set(reflect.MakeSlice(f.slice, 0, n))
}

// appendElem grows the slice at p (of type f.slice) by one zero element
// and returns its address.
func (f *field) appendElem(p unsafe.Pointer) unsafe.Pointer {
	h := (*sliceHeader)(p)
	if h.len == h.cap {
		s := reflect.NewAt(f.slice, p).Elem()
		ns := reflect.MakeSlice(f.slice, h.len, max(4, 2*h.cap))
		reflect.Copy(ns, s)
		s.Set(ns)
	}
	e := unsafe.Add(h.data, uintptr(h.len)*f.elemSize)
	h.len++
	return e
}
