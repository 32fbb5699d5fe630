package payload

// Go types built at run time from message descriptors: one struct per
// message (reflect.StructOf), its fields tagged with their JSON names, and
// beside it the table the protobuf codec walks (encode.go, decode.go).
//
//	scalar            T (bool, int32, int64, uint32, uint64, float32, float64, string, []byte)
//	enum              enumValue (its number, and its name: JSON writes the name, reads either)
//	optional scalar   *T            (proto3 optional, a oneof's member)
//	message           *S            repeated: []S
//	map<K, V>         map[K]V       (bool keys: boolKey; message values *S)
//	Timestamp         *time.Time    repeated: []time.Time
//	Duration          *duration     repeated: []duration
//	wrappers          *T            repeated: []T   (Int64Value: *int64...)
//	Value             any           repeated: []any
//	Struct, ListValue map[string]any, []any
//	Any               *anyValue     (its protobuf bytes as they came)
//
// A recursive message (one that holds itself, maybe through others) is
// held, where it refers back to itself, by a recRef (recursive.go): a *S
// to the codec, [] of them repeated.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe" // and go:linkname

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
	kMessage // also a wrapper (its type the scalar's) and a map's entry
	kTimestamp
	kDuration
	kValue
	kStruct
	kList
	kAny
	kMap
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
	// indirect: a repeated recRef, its elements pointers to messages.
	indirect bool
	// enum is an enum field's values (its Go type enumValue).
	enum *enumInfo
	// mapType and msg (the entry: key, value) of a map field, and zero
	// entries to decode one into (unsafe.Pointers to entries).
	mapType reflect.Type
	entries *sync.Pool
	// oneof are the other members of the field's oneof, cleared when it
	// is decoded (the last member read wins).
	oneof []sibling
}

// sibling is another member of a oneof: where it is, and its Go type.
type sibling struct {
	offset uintptr
	typ    reflect.Type
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
	// maps are the map fields written as {} when empty: made non-nil.
	maps []int
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

// wellKnown are the well-known messages the codec maps to Go values of
// their own (the wrappers are below).
var wellKnown = map[protoreflect.FullName]struct {
	kind kind
	typ  reflect.Type // singular; repeated: []typ, except Timestamp and Duration ([]T of *T)
}{
	timestampName:               {kTimestamp, reflect.PointerTo(timeType)},
	"google.protobuf.Duration":  {kDuration, reflect.PointerTo(durationType)},
	valueName:                   {kValue, anyType},
	"google.protobuf.Struct":    {kStruct, reflect.TypeFor[map[string]any]()},
	"google.protobuf.ListValue": {kList, reflect.TypeFor[[]any]()},
	"google.protobuf.Any":       {kAny, reflect.TypeFor[*anyValue]()},
}

// isWrapper reports whether md is one of wrappers.proto's messages, whose
// JSON is their value: a *T of their one field's type.
func isWrapper(md protoreflect.MessageDescriptor) bool {
	return md.ParentFile().Path() == "google/protobuf/wrappers.proto"
}

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
	// slots are the recRef slots of the recursive messages: those a
	// field refers to while they are being built.
	slots map[protoreflect.FullName]int
	// pend are the types being built, for the recRefs to them.
	pend map[protoreflect.FullName]*msgType
	// written and numbers are Derived's: the fields written even when
	// empty, and the string fields written as JSON numbers.
	written, numbers map[protoreflect.FullName]bool
	// unwritten are a given schema's scalar fields of the item whose key
	// no item of the sample has (absentKeys): left out of the JSON when
	// zero, so that a field the sample never writes (a newer field of
	// the schema) does not add its zero to every REST answer.
	unwritten map[protoreflect.FullName]bool
	// bare are Derived's wrapper messages, whose Go type is their only
	// field's (their JSON is the array or the map itself).
	bare map[protoreflect.FullName]bool
	// quoted64 makes 64-bit integers read JSON strings too ("123", as
	// the protobuf JSON mapping writes them), and write them so.
	quoted64 bool
	// protoNames tags the fields with their .proto names (card_last4),
	// not their JSON names (cardLast4).
	protoNames bool
}

// newBuilder is a builder with nothing built.
func newBuilder() *builder {
	return &builder{types: map[protoreflect.FullName]*msgType{}, building: map[protoreflect.FullName]bool{},
		slots: map[protoreflect.FullName]int{}, pend: map[protoreflect.FullName]*msgType{}}
}

// pending is the type of md, maybe not built yet (its fields are set
// when it is).
func (b *builder) pending(md protoreflect.MessageDescriptor) *msgType {
	m := b.pend[md.FullName()]
	if m == nil {
		m = &msgType{desc: md, key: -1}
		b.pend[md.FullName()] = m
	}
	return m
}

// build returns the type of message md.
func (b *builder) build(md protoreflect.MessageDescriptor) (*msgType, error) {
	if t := b.types[md.FullName()]; t != nil {
		return t, nil
	}
	if md.ExtensionRanges().Len() > 0 {
		return nil, fmt.Errorf("message %s has extensions (proto2): dynamicpb decodes them", md.FullName())
	}
	b.building[md.FullName()] = true
	defer delete(b.building, md.FullName())
	fds := md.Fields()
	m := b.pending(md)
	if b.bare[md.FullName()] && fds.Len() == 1 {
		f, gt, err := b.field(fds.Get(0))
		if err != nil {
			return nil, err
		}
		f.offset = 0
		m.typ, m.fields, m.byNum = gt, []field{f}, make([]int16, f.num+1)
		m.byNum[f.num] = 1
		if f.repeated {
			m.arrays = []int{0} // [] when empty
		} else if f.kind == kMap {
			m.maps = []int{0}
		}
		b.types[md.FullName()] = m
		return m, nil
	}
	var sfs []reflect.StructField
	maxNum := 0
	for i := range fds.Len() {
		fd := fds.Get(i)
		f, gt, err := b.field(fd)
		if err != nil {
			return nil, err
		}
		name := "F" + strconv.Itoa(int(fd.Number()))
		jsonName := fd.JSONName()
		if b.protoNames {
			jsonName = string(fd.Name())
		}
		tag := `json:"` + jsonName
		if (f.ptr || f.repeated || f.kind >= kMessage) && !b.written[fd.FullName()] {
			tag += ",omitempty"
			if f.kind == kMessage && !f.repeated && gt.Kind() == reflect.Struct {
				tag += ",omitzero" // a recRef: a struct, zero when nil
			}
		}
		if b.unwritten[fd.FullName()] && !strings.Contains(tag, ",omitempty") {
			tag += ",omitempty"
		}
		if f.repeated && b.written[fd.FullName()] {
			m.arrays = append(m.arrays, i)
		}
		if f.kind == kMap && b.written[fd.FullName()] {
			m.maps = append(m.maps, i)
		}
		sfs = append(sfs, reflect.StructField{Name: name, Type: gt, Tag: reflect.StructTag(tag + `"`)})
		m.fields = append(m.fields, f)
		maxNum = max(maxNum, int(fd.Number()))
		if m.key < 0 && !f.repeated && !f.ptr && f.kind <= kString && f.enum == nil {
			m.key = i
		}
	}
	m.typ = reflect.StructOf(sfs)
	for i := range m.fields {
		m.fields[i].offset = m.typ.Field(i).Offset
	}
	for i := range fds.Len() {
		// A oneof's member clears the others when decoded.
		fd := fds.Get(i)
		if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() {
			for j := range fds.Len() {
				if j != i && fds.Get(j).ContainingOneof() == o {
					m.fields[i].oneof = append(m.fields[i].oneof, sibling{m.fields[j].offset, m.typ.Field(j).Type})
				}
			}
		}
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
	if s, ok := b.slots[md.FullName()]; ok {
		setSlot(s, m)
	}
	return m, nil
}

// field is fd's codec entry and Go type.
func (b *builder) field(fd protoreflect.FieldDescriptor) (field, reflect.Type, error) {
	f := field{num: fd.Number(), repeated: fd.IsList()}
	if fd.IsMap() {
		return b.mapField(fd)
	}
	var gt reflect.Type
	var wt protowire.Type
	switch fd.Kind() {
	case protoreflect.GroupKind:
		return f, nil, fmt.Errorf("field %s: groups are not supported", fd.FullName())
	case protoreflect.MessageKind:
		wt = protowire.BytesType
		sub := fd.Message()
		wk, known := wellKnown[sub.FullName()]
		switch {
		case known:
			f.kind, gt = wk.kind, wk.typ
			if f.repeated && (f.kind == kTimestamp || f.kind == kDuration || f.kind == kAny) {
				gt = gt.Elem()
			}
		case isWrapper(sub):
			// Its JSON is its value: a *T whose message is its one field.
			vf, vt, err := b.field(sub.Fields().ByNumber(1))
			if err != nil {
				return f, nil, err
			}
			vf.offset = 0
			f.kind, f.msg, gt = kMessage, &msgType{desc: sub, typ: vt, fields: []field{vf}, byNum: []int16{0, 1}, key: -1}, vt
			if !f.repeated {
				gt = reflect.PointerTo(gt)
			}
		case b.building[sub.FullName()]:
			// A message that holds itself: a recRef to it, a *S the
			// codec reads through (repeated: a []*S).
			s, ok := b.slots[sub.FullName()]
			if !ok {
				var err error
				if s, err = b.recSlotFor(sub); err != nil {
					return f, nil, err
				}
				b.slots[sub.FullName()] = s
			}
			single, repeated := recTypes[s]()
			f.kind, f.msg, f.indirect, gt = kMessage, b.pending(sub), f.repeated, single
			if f.repeated {
				f.slice, f.elemSize = repeated, single.Size()
				f.tag = protowire.AppendTag(nil, f.num, protowire.BytesType)
				return f, repeated, nil
			}
		default:
			m, err := b.build(sub)
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
		if fd.Kind() == protoreflect.EnumKind {
			f.enum, gt = newEnumInfo(fd.Enum()), enumType
		}
		if b.quoted64 && gt.Size() == 8 && gt.Kind() != reflect.Float64 {
			gt = quotedType[gt.Kind() == reflect.Uint64]
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

// mapField is a map field's entry: a map[K]V, and the entry message
// (key, value) it is written as.
func (b *builder) mapField(fd protoreflect.FieldDescriptor) (field, reflect.Type, error) {
	f := field{num: fd.Number(), kind: kMap}
	kf, kt, err := b.field(fd.MapKey())
	if err != nil {
		return f, nil, err
	}
	switch kf.kind {
	case kFloat, kDouble, kBytes, kMessage:
		return f, nil, fmt.Errorf("field %s: a map key cannot be %v", fd.FullName(), fd.MapKey().Kind())
	case kBool:
		kt = boolKeyType // JSON keys are strings: "true"
	default:
		kt = scalars[fd.MapKey().Kind()].goType // JSON keys are strings already
	}
	vf, vt, err := b.field(fd.MapValue())
	if err != nil {
		return f, nil, err
	}
	et := reflect.StructOf([]reflect.StructField{{Name: "K", Type: kt}, {Name: "V", Type: vt}})
	kf.offset, vf.offset = et.Field(0).Offset, et.Field(1).Offset
	f.msg = &msgType{desc: fd.Message(), typ: et, fields: []field{kf, vf}, byNum: []int16{0, 1, 2}, key: -1}
	f.mapType = reflect.MapOf(kt, vt)
	f.entries = &sync.Pool{New: func() any { return reflect.New(et).UnsafePointer() }}
	f.tag = protowire.AppendTag(nil, f.num, protowire.BytesType)
	return f, f.mapType, nil
}

// sliceHeader is a slice's representation, for appending to a slice of a
// type built at run time.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// grow makes room in the slice at p (of type f.slice) for n more
// elements, at once.
func (f *field) grow(p unsafe.Pointer, n int) {
	h := (*sliceHeader)(p)
	if h.cap == 0 {
		h.data, h.cap = newArray(f.slice.Elem(), n), n
		return
	}
	if h.cap-h.len < n {
		s := reflect.NewAt(f.slice, p).Elem()
		ns := reflect.MakeSlice(f.slice, h.len, h.len+n)
		reflect.Copy(ns, s)
		s.Set(ns)
	}
}

// reserve makes the empty slice at p (of type f.slice) room for n
// elements.
func (f *field) reserve(p unsafe.Pointer, n int) {
	h := (*sliceHeader)(p)
	h.data = newArray(f.slice.Elem(), n) // reflect.MakeSlice would allocate its Value's header too
	h.len, h.cap = 0, n
}

// unsafeNewArray allocates an array of n elements of a type, as
// reflect.MakeSlice does, without the slice header MakeSlice allocates
// for its Value.
//
//go:linkname unsafeNewArray reflect.unsafe_NewArray
func unsafeNewArray(typ unsafe.Pointer, n int) unsafe.Pointer

// newArray allocates n zero elements of type t.
func newArray(t reflect.Type, n int) unsafe.Pointer {
	return unsafeNewArray((*[2]unsafe.Pointer)(unsafe.Pointer(&t))[1], n) // the *rtype in t
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
