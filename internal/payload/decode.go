package payload

// The protobuf decoder: each field found by its number in a table, its
// value written at its offset. Repeated scalars are read packed or not;
// unknown fields are skipped; strings are checked to be UTF-8 and
// timestamps to be valid, as the generated code and data.FromProto do.

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
)

var errTruncated = errors.New("truncated or malformed protobuf")

// maxNesting bounds the nesting of messages decoded, as protobuf-go's
// default RecursionLimit does.
const maxNesting = 10000

var errNesting = fmt.Errorf("messages nested deeper than %d levels", maxNesting)

// unmarshal decodes b into the message at p (a zero value, or one to merge
// into).
func (m *msgType) unmarshal(b []byte, p unsafe.Pointer) error { return m.unmarshalAt(b, p, 0) }

// unmarshalAt is unmarshal of a message nested depth levels deep.
func (m *msgType) unmarshalAt(b []byte, p unsafe.Pointer, depth int) error {
	if depth > maxNesting {
		return errNesting
	}
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errTruncated
		}
		b = b[n:]
		var f *field
		if int(num) < len(m.byNum) {
			if i := m.byNum[num]; i > 0 {
				f = &m.fields[i-1]
			}
		}
		if f == nil {
			if n = protowire.ConsumeFieldValue(num, wt, b); n < 0 {
				return errTruncated
			}
			b = b[n:]
			continue
		}
		fp := unsafe.Add(p, f.offset)
		if f.repeated && (*sliceHeader)(fp).cap == 0 && (wt != protowire.BytesType || f.kind >= kString) {
			// The first of a repeated field's records (not packed): they
			// are counted, so that its slice is made once, at its size,
			// as DecodeList does for a list (a slice of structs grown by
			// doubling copies every one of them again and again).
			f.reserve(fp, countRecords(b, num, wt))
		}
		for _, o := range f.oneof {
			// The other members of its oneof: the last one read wins.
			if op := unsafe.Add(p, o.offset); o.typ.Size() == unsafe.Sizeof(p) {
				*(*unsafe.Pointer)(op) = nil // a pointer, or a recRef
			} else {
				reflect.NewAt(o.typ, op).Elem().SetZero()
			}
		}
		var err error
		if b, err = f.decode(b, wt, fp, depth); err != nil {
			return fmt.Errorf("%s: %w", f.name(m), err)
		}
	}
	for _, i := range m.maps {
		// A map the sample writes as {} even when empty, as for arrays.
		if mp := (*unsafe.Pointer)(unsafe.Add(p, m.fields[i].offset)); *mp == nil {
			*mp = reflect.MakeMap(m.fields[i].mapType).UnsafePointer()
		}
	}
	for _, i := range m.arrays {
		// A list the sample writes as [] even when empty: protobuf has no
		// empty list, so it is made one here, as a JSON decoder does.
		if h := (*sliceHeader)(unsafe.Add(p, m.fields[i].offset)); h.data == nil {
			h.data = unsafe.Pointer(&zeroBase)
		}
	}
	return nil
}

// zeroBase is where an empty, non-nil slice points.
var zeroBase [0]uint64

func (f *field) name(m *msgType) string {
	if fd := m.desc.Fields().ByNumber(f.num); fd != nil {
		return string(fd.FullName())
	}
	return string(m.desc.FullName()) // a wrapper's value
}

// decode reads one record of field f (wire type wt) from b into the field
// at p and returns the rest of b.
func (f *field) decode(b []byte, wt protowire.Type, p unsafe.Pointer, depth int) ([]byte, error) {
	if f.repeated && wt == protowire.BytesType && f.kind < kString {
		v, n := protowire.ConsumeBytes(b) // packed
		if n < 0 {
			return nil, errTruncated
		}
		w := wt2(f.kind)
		f.grow(p, packedCount(v, w))
		if littleEndian && w != protowire.VarintType && len(v)%int(f.elemSize) == 0 {
			// Fixed-size numbers: their bytes are the elements', little
			// endian, as the slice holds them.
			h := (*sliceHeader)(p)
			copy(unsafe.Slice((*byte)(unsafe.Add(h.data, uintptr(h.len)*f.elemSize)), len(v)), v)
			h.len += len(v) / int(f.elemSize)
			return b[n:], nil
		}
		for len(v) > 0 {
			e := f.appendElem(p)
			k, err := f.scalar(v, wt2(f.kind), e)
			if err != nil {
				return nil, err
			}
			if f.enum != nil {
				f.named(e)
			}
			v = v[k:]
		}
		return b[n:], nil
	}
	if wt != f.wireType() {
		return nil, fmt.Errorf("wire type %d, want %d", wt, f.wireType())
	}
	switch {
	case f.kind == kMap:
		return f.nested(b, func(v []byte) error { return f.decodeEntry(v, p, depth) })
	case f.repeated:
		p = f.appendElem(p)
		switch f.kind {
		case kMessage:
			if f.indirect { // a recRef: a pointer to the message
				mp := newOf(f.msg)
				*(*unsafe.Pointer)(p) = mp
				p = mp
			}
			return f.nested(b, func(v []byte) error { return f.msg.unmarshalAt(v, p, depth+1) })
		case kTimestamp:
			return f.nested(b, func(v []byte) error { return decodeTimestamp(v, (*time.Time)(p)) })
		case kDuration:
			return f.nested(b, func(v []byte) error { return decodeDuration(v, (*duration)(p)) })
		case kAny:
			return f.nested(b, func(v []byte) error { return decodeAny(v, (*anyValue)(p)) })
		}
	case f.ptr:
		vp := *(*unsafe.Pointer)(p)
		if vp == nil {
			vp = f.newScalar()
			*(*unsafe.Pointer)(p) = vp
		}
		p = vp
	case f.kind == kMessage:
		mp := *(*unsafe.Pointer)(p)
		if mp == nil {
			mp = newOf(f.msg)
			*(*unsafe.Pointer)(p) = mp
		}
		return f.nested(b, func(v []byte) error { return f.msg.unmarshalAt(v, mp, depth+1) })
	case f.kind == kTimestamp:
		t := new(time.Time)
		*(**time.Time)(p) = t
		return f.nested(b, func(v []byte) error { return decodeTimestamp(v, t) })
	case f.kind == kDuration:
		d := new(duration)
		*(**duration)(p) = d
		return f.nested(b, func(v []byte) error { return decodeDuration(v, d) })
	case f.kind == kAny:
		a := new(anyValue)
		*(**anyValue)(p) = a
		return f.nested(b, func(v []byte) error { return decodeAny(v, a) })
	}
	switch f.kind {
	case kValue:
		return f.nested(b, func(v []byte) error {
			x, err := decodeValue(v, 0)
			*(*any)(p) = x
			return err
		})
	case kStruct:
		return f.nested(b, func(v []byte) error {
			x, err := decodeStruct(v, 0)
			*(*map[string]any)(p) = x
			return err
		})
	case kList:
		return f.nested(b, func(v []byte) error {
			x, err := decodeList(v, 0)
			*(*[]any)(p) = x
			return err
		})
	}
	n, err := f.scalar(b, wt, p)
	if err != nil {
		return nil, err
	}
	if f.enum != nil {
		f.named(p)
	}
	return b[n:], nil
}

// named gives the enum value at p, its number just read, its name.
func (f *field) named(p unsafe.Pointer) {
	e := (*enumValue)(p)
	e.Name = f.enum.name(e.N)
}

// decodeEntry decodes a map entry (key 1, value 2) into the map at p;
// a message value missing from it is an empty message, as generated code
// makes it.
func (f *field) decodeEntry(b []byte, p unsafe.Pointer, depth int) error {
	e := reflect.NewAt(f.msg.typ, f.entries.Get().(unsafe.Pointer)) // a zero entry
	defer func() {
		e.Elem().SetZero()
		f.entries.Put(e.UnsafePointer()) // a pointer: no allocation to hold it
	}()
	if err := f.msg.unmarshalAt(b, e.UnsafePointer(), depth); err != nil {
		return err
	}
	if vf := &f.msg.fields[1]; vf.kind == kMessage {
		if vp := (*unsafe.Pointer)(unsafe.Add(e.UnsafePointer(), vf.offset)); *vp == nil {
			*vp = newOf(vf.msg)
		}
	}
	m := reflect.NewAt(f.mapType, p).Elem()
	if m.IsNil() {
		m.Set(reflect.MakeMap(f.mapType))
	}
	m.SetMapIndex(e.Elem().Field(0), e.Elem().Field(1))
	return nil
}

// decodeDuration reads a google.protobuf.Duration into d, checking it as
// durationpb's CheckValid does.
func decodeDuration(b []byte, d *duration) error {
	var v duration
	err := eachVarint(b, func(num protowire.Number, x uint64) {
		if num == 1 {
			v.Seconds = int64(x)
		} else {
			v.Nanos = int32(x)
		}
	})
	if err != nil {
		return err
	}
	if !v.valid() {
		return fmt.Errorf("invalid duration (seconds %d, nanos %d)", v.Seconds, v.Nanos)
	}
	*d = v
	return nil
}

// decodeAny reads a google.protobuf.Any's type URL and value, as bytes.
func decodeAny(b []byte, a *anyValue) error {
	for len(b) > 0 {
		num, wt, k := protowire.ConsumeTag(b)
		if k < 0 {
			return errTruncated
		}
		b = b[k:]
		if (num == 1 || num == 2) && wt == protowire.BytesType {
			v, k := protowire.ConsumeBytes(b)
			if k < 0 {
				return errTruncated
			}
			if num == 1 {
				if !utf8.Valid(v) {
					return errUTF8
				}
				a.TypeURL = string(v)
			} else {
				a.Value = append([]byte{}, v...)
			}
			b = b[k:]
			continue
		}
		if k = protowire.ConsumeFieldValue(num, wt, b); k < 0 {
			return errTruncated
		}
		b = b[k:]
	}
	return nil
}

// eachVarint calls fn with fields 1 and 2 of b, varints (a Timestamp's,
// a Duration's); others are skipped.
func eachVarint(b []byte, fn func(protowire.Number, uint64)) error {
	for len(b) > 0 {
		num, wt, k := protowire.ConsumeTag(b)
		if k < 0 {
			return errTruncated
		}
		b = b[k:]
		if wt != protowire.VarintType || num > 2 {
			if k = protowire.ConsumeFieldValue(num, wt, b); k < 0 {
				return errTruncated
			}
			b = b[k:]
			continue
		}
		v, k := protowire.ConsumeVarint(b)
		if k < 0 {
			return errTruncated
		}
		b = b[k:]
		fn(num, v)
	}
	return nil
}

// nested reads a length-delimited value and hands it to body.
func (f *field) nested(b []byte, body func([]byte) error) ([]byte, error) {
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return nil, errTruncated
	}
	return b[n:], body(v)
}

// scalar reads one scalar of f's kind from b into p; it returns the bytes
// read.
func (f *field) scalar(b []byte, wt protowire.Type, p unsafe.Pointer) (int, error) {
	switch wt {
	case protowire.VarintType:
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return 0, errTruncated
		}
		switch f.kind {
		case kBool:
			*(*bool)(p) = v != 0
		case kInt32:
			*(*int32)(p) = int32(v)
		case kSint32:
			*(*int32)(p) = int32(protowire.DecodeZigZag(v & math.MaxUint32))
		case kInt64:
			*(*int64)(p) = int64(v)
		case kSint64:
			*(*int64)(p) = protowire.DecodeZigZag(v)
		case kUint32:
			*(*uint32)(p) = uint32(v)
		case kUint64:
			*(*uint64)(p) = v
		}
		return n, nil
	case protowire.Fixed32Type:
		v, n := protowire.ConsumeFixed32(b)
		if n < 0 {
			return 0, errTruncated
		}
		*(*uint32)(p) = v // float32, int32 and uint32 share the bits
		return n, nil
	case protowire.Fixed64Type:
		v, n := protowire.ConsumeFixed64(b)
		if n < 0 {
			return 0, errTruncated
		}
		*(*uint64)(p) = v
		return n, nil
	}
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return 0, errTruncated
	}
	if f.kind == kBytes {
		*(*[]byte)(p) = append([]byte{}, v...)
		return n, nil
	}
	if !utf8.Valid(v) {
		return 0, errUTF8
	}
	*(*string)(p) = string(v)
	return n, nil
}

// wireType is the wire type of one unpacked record of f.
func (f *field) wireType() protowire.Type {
	if f.kind >= kString {
		return protowire.BytesType
	}
	return wt2(f.kind)
}

// wt2 is the wire type of a scalar kind.
func wt2(k kind) protowire.Type {
	switch k {
	case kSfixed32, kFixed32, kFloat:
		return protowire.Fixed32Type
	case kSfixed64, kFixed64, kDouble:
		return protowire.Fixed64Type
	}
	return protowire.VarintType
}

// newScalar allocates an optional scalar's value.
func (f *field) newScalar() unsafe.Pointer {
	if f.enum != nil {
		return unsafe.Pointer(new(enumValue))
	}
	switch f.kind {
	case kBool:
		return unsafe.Pointer(new(bool))
	case kInt32, kSint32, kSfixed32, kUint32, kFixed32, kFloat:
		return unsafe.Pointer(new(uint32))
	case kString:
		return unsafe.Pointer(new(string))
	case kBytes:
		return unsafe.Pointer(new([]byte))
	}
	return unsafe.Pointer(new(uint64))
}

// decodeTimestamp reads a google.protobuf.Timestamp into t, checking it
// as timestamppb's CheckValid does.
func decodeTimestamp(b []byte, t *time.Time) error {
	var s, n int64
	err := eachVarint(b, func(num protowire.Number, v uint64) {
		if num == 1 {
			s = int64(v)
		} else {
			n = int64(int32(v))
		}
	})
	if err != nil {
		return err
	}
	const minSec, maxSec = -62135596800, 253402300799 // 0001-01-01 to 9999-12-31
	if s < minSec || s > maxSec || n < 0 || n >= 1e9 {
		return fmt.Errorf("invalid timestamp (seconds %d, nanos %d)", s, n)
	}
	*t = time.Unix(s, n).UTC()
	return nil
}

// maxValueDepth bounds the nesting of a google.protobuf.Value decoded.
const maxValueDepth = 100

// decodeValue reads a google.protobuf.Value as JSON decodes one: nil,
// bool, float64, string, []any or map[string]any.
func decodeValue(b []byte, depth int) (any, error) {
	if depth > maxValueDepth {
		return nil, errors.New("google.protobuf.Value nested too deep")
	}
	var out any
	for len(b) > 0 {
		num, wt, k := protowire.ConsumeTag(b)
		if k < 0 {
			return nil, errTruncated
		}
		b = b[k:]
		switch {
		case num == 1 && wt == protowire.VarintType:
			_, k = protowire.ConsumeVarint(b)
			out = nil
		case num == 2 && wt == protowire.Fixed64Type:
			var v uint64
			v, k = protowire.ConsumeFixed64(b)
			out = math.Float64frombits(v)
		case num == 3 && wt == protowire.BytesType:
			var v []byte
			v, k = protowire.ConsumeBytes(b)
			if k >= 0 && !utf8.Valid(v) {
				return nil, errUTF8
			}
			out = string(v)
		case num == 4 && wt == protowire.VarintType:
			var v uint64
			v, k = protowire.ConsumeVarint(b)
			out = v != 0
		case (num == 5 || num == 6) && wt == protowire.BytesType:
			var v []byte
			v, k = protowire.ConsumeBytes(b)
			if k < 0 {
				return nil, errTruncated
			}
			var err error
			if num == 5 {
				out, err = decodeStruct(v, depth)
			} else {
				out, err = decodeList(v, depth)
			}
			if err != nil {
				return nil, err
			}
		default:
			k = protowire.ConsumeFieldValue(num, wt, b)
		}
		if k < 0 {
			return nil, errTruncated
		}
		b = b[k:]
	}
	return out, nil
}

// countRecords counts the records numbered num, of wire type wt, from b,
// the value of one of them (its tag just read) on: that one and the later
// ones. A malformed record ends the count; decoding reports it.
func countRecords(b []byte, num protowire.Number, wt protowire.Type) int {
	k := protowire.ConsumeFieldValue(num, wt, b)
	if k < 0 {
		return 1
	}
	n := 1
	for b = b[k:]; len(b) > 0; {
		m, t, k := protowire.ConsumeTag(b)
		if k < 0 {
			break
		}
		b = b[k:]
		if k = protowire.ConsumeFieldValue(m, t, b); k < 0 {
			break
		}
		b = b[k:]
		if m == num && t == wt {
			n++
		}
	}
	return n
}

// packedCount is the number of scalars of wire type wt packed in v.
func packedCount(v []byte, wt protowire.Type) int {
	switch wt {
	case protowire.Fixed32Type:
		return len(v) / 4
	case protowire.Fixed64Type:
		return len(v) / 8
	}
	n := 0
	for _, c := range v {
		if c < 0x80 {
			n++
		}
	}
	return n
}

// eachBytes calls fn with every length-delimited field of b numbered num.
func eachBytes(b []byte, num protowire.Number, fn func([]byte) error) error {
	for len(b) > 0 {
		n, wt, k := protowire.ConsumeTag(b)
		if k < 0 {
			return errTruncated
		}
		b = b[k:]
		if n == num && wt == protowire.BytesType {
			v, k := protowire.ConsumeBytes(b)
			if k < 0 {
				return errTruncated
			}
			if err := fn(v); err != nil {
				return err
			}
			b = b[k:]
			continue
		}
		if k = protowire.ConsumeFieldValue(n, wt, b); k < 0 {
			return errTruncated
		}
		b = b[k:]
	}
	return nil
}

func decodeList(b []byte, depth int) ([]any, error) {
	out := []any{}
	err := eachBytes(b, 1, func(v []byte) error {
		x, err := decodeValue(v, depth+1)
		out = append(out, x)
		return err
	})
	return out, err
}

func decodeStruct(b []byte, depth int) (map[string]any, error) {
	out := map[string]any{}
	err := eachBytes(b, 1, func(entry []byte) error {
		var key string
		var val any
		err := eachBytes(entry, 1, func(k []byte) error { key = string(k); return nil })
		if err == nil {
			err = eachBytes(entry, 2, func(v []byte) error {
				var err error
				val, err = decodeValue(v, depth+1)
				return err
			})
		}
		out[key] = val
		return err
	})
	return out, err
}

// littleEndian: the platform holds numbers as protobuf writes fixed-size
// ones, so packed ones can be copied as they are (decode).
var littleEndian = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()
