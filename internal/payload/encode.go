package payload

// The protobuf encoder: one pass over a message's fields by offset, each
// appended with protowire. A nested message is appended after a one-byte
// length, which is widened (the message moved up) when it is longer than
// 127 bytes, so no message is sized twice. Strings are checked to be UTF-8,
// as the generated code does for proto3.

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
)

var errUTF8 = errors.New("string field is not valid UTF-8")

// append appends the message at p.
func (m *msgType) append(b []byte, p unsafe.Pointer) ([]byte, error) {
	return m.appendExcept(b, p, -1)
}

// appendExcept appends the message at p without its field fields[skip]
// (a wrapped list's items, appended before it).
func (m *msgType) appendExcept(b []byte, p unsafe.Pointer, skip int) ([]byte, error) {
	var err error
	for i := range m.fields {
		if i == skip {
			continue
		}
		f := &m.fields[i]
		fp := unsafe.Add(p, f.offset)
		switch {
		case f.repeated:
			b, err = f.appendRepeated(b, fp)
		case f.ptr:
			if vp := *(*unsafe.Pointer)(fp); vp != nil {
				b, err = f.appendOne(b, vp, true)
			}
		default:
			b, err = f.appendOne(b, fp, false)
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendOne appends the singular field whose value is at p; a zero value
// of an implicit-presence scalar is left out unless always.
func (f *field) appendOne(b []byte, p unsafe.Pointer, always bool) ([]byte, error) {
	switch f.kind {
	case kBool:
		if v := *(*bool)(p); v || always {
			b = append(b, f.tag...)
			b = protowire.AppendVarint(b, protowire.EncodeBool(v))
		}
	case kInt32, kSint32, kSfixed32:
		if v := *(*int32)(p); v != 0 || always {
			b = appendInt32(append(b, f.tag...), f.kind, v)
		}
	case kInt64, kSint64, kSfixed64:
		if v := *(*int64)(p); v != 0 || always {
			b = appendInt64(append(b, f.tag...), f.kind, v)
		}
	case kUint32, kFixed32:
		if v := *(*uint32)(p); v != 0 || always {
			b = appendUint32(append(b, f.tag...), f.kind, v)
		}
	case kUint64, kFixed64:
		if v := *(*uint64)(p); v != 0 || always {
			b = appendUint64(append(b, f.tag...), f.kind, v)
		}
	case kFloat:
		if v := *(*float32)(p); v != 0 || math.Signbit(float64(v)) || always {
			b = protowire.AppendFixed32(append(b, f.tag...), math.Float32bits(v))
		}
	case kDouble:
		if v := *(*float64)(p); v != 0 || math.Signbit(v) || always {
			b = protowire.AppendFixed64(append(b, f.tag...), math.Float64bits(v))
		}
	case kString:
		if v := *(*string)(p); v != "" || always {
			if !utf8.ValidString(v) {
				return b, errUTF8
			}
			b = protowire.AppendString(append(b, f.tag...), v)
		}
	case kBytes:
		if v := *(*[]byte)(p); len(v) > 0 || always {
			b = protowire.AppendBytes(append(b, f.tag...), v)
		}
	case kMessage:
		if mp := *(*unsafe.Pointer)(p); mp != nil {
			return appendNested(append(b, f.tag...), func(b []byte) ([]byte, error) { return f.msg.append(b, mp) })
		}
	case kTimestamp:
		if tp := *(**time.Time)(p); tp != nil {
			b = appendTimestamp(append(b, f.tag...), tp)
		}
	case kValue:
		if v := *(*any)(p); v != nil {
			return appendNested(append(b, f.tag...), func(b []byte) ([]byte, error) { return appendValue(b, v) })
		}
	}
	return b, nil
}

// appendRepeated appends a repeated field: packed scalars in one record,
// anything else one record per element.
func (f *field) appendRepeated(b []byte, p unsafe.Pointer) ([]byte, error) {
	h := (*sliceHeader)(p)
	if h.len == 0 {
		return b, nil
	}
	if f.packed {
		b = append(b, f.tag...)
		return appendNested(b, func(b []byte) ([]byte, error) {
			for i := range h.len {
				b = f.appendPacked(b, unsafe.Add(h.data, uintptr(i)*f.elemSize))
			}
			return b, nil
		})
	}
	var err error
	for i := range h.len {
		e := unsafe.Add(h.data, uintptr(i)*f.elemSize)
		switch f.kind {
		case kMessage:
			b, err = appendNested(append(b, f.tag...), func(b []byte) ([]byte, error) { return f.msg.append(b, e) })
		case kTimestamp:
			b = appendTimestamp(append(b, f.tag...), (*time.Time)(e))
		case kValue:
			v := *(*any)(e)
			b, err = appendNested(append(b, f.tag...), func(b []byte) ([]byte, error) { return appendValue(b, v) })
		default:
			b, err = f.appendOne(b, e, true)
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendPacked appends one element of a packed field, without a key.
func (f *field) appendPacked(b []byte, p unsafe.Pointer) []byte {
	switch f.kind {
	case kBool:
		return protowire.AppendVarint(b, protowire.EncodeBool(*(*bool)(p)))
	case kInt32, kSint32, kSfixed32:
		return appendInt32(b, f.kind, *(*int32)(p))
	case kInt64, kSint64, kSfixed64:
		return appendInt64(b, f.kind, *(*int64)(p))
	case kUint32, kFixed32:
		return appendUint32(b, f.kind, *(*uint32)(p))
	case kUint64, kFixed64:
		return appendUint64(b, f.kind, *(*uint64)(p))
	case kFloat:
		return protowire.AppendFixed32(b, math.Float32bits(*(*float32)(p)))
	}
	return protowire.AppendFixed64(b, math.Float64bits(*(*float64)(p)))
}

func appendInt32(b []byte, k kind, v int32) []byte {
	switch k {
	case kSint32:
		return protowire.AppendVarint(b, protowire.EncodeZigZag(int64(v)))
	case kSfixed32:
		return protowire.AppendFixed32(b, uint32(v))
	}
	return protowire.AppendVarint(b, uint64(int64(v)))
}

func appendInt64(b []byte, k kind, v int64) []byte {
	switch k {
	case kSint64:
		return protowire.AppendVarint(b, protowire.EncodeZigZag(v))
	case kSfixed64:
		return protowire.AppendFixed64(b, uint64(v))
	}
	return protowire.AppendVarint(b, uint64(v))
}

func appendUint32(b []byte, k kind, v uint32) []byte {
	if k == kFixed32 {
		return protowire.AppendFixed32(b, v)
	}
	return protowire.AppendVarint(b, uint64(v))
}

func appendUint64(b []byte, k kind, v uint64) []byte {
	if k == kFixed64 {
		return protowire.AppendFixed64(b, v)
	}
	return protowire.AppendVarint(b, v)
}

// appendNested appends a length-delimited value written by body: a one-byte
// length first, widened afterwards if the value is longer.
func appendNested(b []byte, body func([]byte) ([]byte, error)) ([]byte, error) {
	start := len(b)
	b = append(b, 0)
	b, err := body(b)
	if err != nil {
		return b, err
	}
	n := len(b) - start - 1
	if n < 0x80 {
		b[start] = byte(n)
		return b, nil
	}
	w := protowire.SizeVarint(uint64(n))
	for range w - 1 {
		b = append(b, 0)
	}
	copy(b[start+w:], b[start+1:start+1+n])
	protowire.AppendVarint(b[:start], uint64(n))
	return b, nil
}

// appendTimestamp appends t as a google.protobuf.Timestamp (its length
// and fields; the key is the caller's).
func appendTimestamp(b []byte, t *time.Time) []byte {
	s, n := t.Unix(), int32(t.Nanosecond())
	size := 0
	if s != 0 {
		size += 1 + protowire.SizeVarint(uint64(s))
	}
	if n != 0 {
		size += 1 + protowire.SizeVarint(uint64(n))
	}
	b = protowire.AppendVarint(b, uint64(size))
	if s != 0 {
		b = protowire.AppendVarint(append(b, 0x08), uint64(s))
	}
	if n != 0 {
		b = protowire.AppendVarint(append(b, 0x10), uint64(n))
	}
	return b
}

// appendValue appends v (nil, bool, float64, string, []any, map[string]any,
// as JSON decodes) as the fields of a google.protobuf.Value.
func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, 0x08, 0), nil // null_value: NULL_VALUE
	case float64:
		return protowire.AppendFixed64(append(b, 0x11), math.Float64bits(v)), nil
	case string:
		if !utf8.ValidString(v) {
			return b, errUTF8
		}
		return protowire.AppendString(append(b, 0x1a), v), nil
	case bool:
		return protowire.AppendVarint(append(b, 0x20), protowire.EncodeBool(v)), nil
	case map[string]any: // struct_value: Struct{map<string, Value> fields = 1}
		return appendNested(append(b, 0x2a), func(b []byte) ([]byte, error) {
			var err error
			// In key order, as encoding/json writes a map: the same
			// object is always the same bytes (the payload's hash).
			for _, k := range slices.Sorted(maps.Keys(v)) {
				e := v[k]
				b, err = appendNested(append(b, 0x0a), func(b []byte) ([]byte, error) {
					b = protowire.AppendString(append(b, 0x0a), k)
					return appendNested(append(b, 0x12), func(b []byte) ([]byte, error) { return appendValue(b, e) })
				})
				if err != nil {
					return b, err
				}
			}
			return b, nil
		})
	case []any: // list_value: ListValue{repeated Value values = 1}
		return appendNested(append(b, 0x32), func(b []byte) ([]byte, error) {
			var err error
			for _, e := range v {
				if b, err = appendNested(append(b, 0x0a), func(b []byte) ([]byte, error) { return appendValue(b, e) }); err != nil {
					return b, err
				}
			}
			return b, nil
		})
	}
	return b, fmt.Errorf("a google.protobuf.Value cannot hold %T", v)
}
