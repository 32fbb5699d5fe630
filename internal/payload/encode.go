package payload

// The protobuf encoder: one pass over a message's fields by offset, each
// appended with protowire. A nested message is appended after a one-byte
// length, which is widened (the message moved up) when it is longer than
// 127 bytes, so no message is sized twice. Strings are checked to be UTF-8,
// as the generated code does for proto3.

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
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
		case f.kind == kMap:
			b, err = f.appendMap(b, fp)
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
		v := *(*int32)(p)
		if f.enum != nil {
			var err error
			if v, err = f.enum.numberOf((*enumValue)(p)); err != nil {
				return b, err
			}
		}
		if v != 0 || always {
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
	case kDuration:
		if dp := *(**duration)(p); dp != nil {
			return appendDuration(append(b, f.tag...), dp)
		}
	case kValue:
		if v := *(*any)(p); v != nil {
			return appendNested(append(b, f.tag...), func(b []byte) ([]byte, error) { return appendValue(b, v) })
		}
	case kStruct:
		if v := *(*map[string]any)(p); v != nil {
			return appendNested(append(b, f.tag...), func(b []byte) ([]byte, error) { return appendStruct(b, v) })
		}
	case kList:
		if v := *(*[]any)(p); v != nil {
			return appendNested(append(b, f.tag...), func(b []byte) ([]byte, error) { return appendListValue(b, v) })
		}
	case kAny:
		if a := *(**anyValue)(p); a != nil {
			return appendAny(append(b, f.tag...), a)
		}
	}
	return b, nil
}

// appendRecord appends one element of a repeated field of a message kind,
// key first; e points at the element.
func (f *field) appendRecord(b []byte, e unsafe.Pointer) ([]byte, error) {
	b = append(b, f.tag...)
	switch f.kind {
	case kMessage:
		if f.indirect {
			if e = *(*unsafe.Pointer)(e); e == nil {
				return append(b, 0), nil // a nil element: an empty message
			}
		}
		return appendNested(b, func(b []byte) ([]byte, error) { return f.msg.append(b, e) })
	case kTimestamp:
		return appendTimestamp(b, (*time.Time)(e)), nil
	case kDuration:
		return appendDuration(b, (*duration)(e))
	case kValue:
		v := *(*any)(e)
		return appendNested(b, func(b []byte) ([]byte, error) { return appendValue(b, v) })
	case kStruct:
		v := *(*map[string]any)(e)
		return appendNested(b, func(b []byte) ([]byte, error) { return appendStruct(b, v) })
	case kList:
		v := *(*[]any)(e)
		return appendNested(b, func(b []byte) ([]byte, error) { return appendListValue(b, v) })
	}
	return appendAny(b, (*anyValue)(e)) // kAny
}

// appendMap appends a map field: an entry (key 1, value 2) per key, in
// key order (the same map is always the same bytes: the payload's hash),
// its key and value written even when zero, as generated code does.
func (f *field) appendMap(b []byte, p unsafe.Pointer) ([]byte, error) {
	mv := reflect.NewAt(f.mapType, p).Elem()
	if mv.Len() == 0 {
		return b, nil
	}
	keys := mv.MapKeys()
	slices.SortFunc(keys, compareKeys)
	entry := reflect.New(f.msg.typ)
	ep := entry.UnsafePointer()
	kf, vf := &f.msg.fields[0], &f.msg.fields[1]
	var err error
	for _, k := range keys {
		entry.Elem().Field(0).Set(k)
		entry.Elem().Field(1).Set(mv.MapIndex(k))
		b, err = appendNested(append(b, f.tag...), func(b []byte) ([]byte, error) {
			b, err := kf.appendOne(b, unsafe.Add(ep, kf.offset), true)
			if err != nil {
				return b, err
			}
			vp := unsafe.Add(ep, vf.offset)
			if vf.kind >= kMessage && vf.kind != kStruct && vf.kind != kList && *(*unsafe.Pointer)(vp) == nil {
				return append(append(b, vf.tag...), 0), nil // an empty message
			}
			return vf.appendOne(b, vp, true)
		})
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// compareKeys orders map keys.
func compareKeys(a, b reflect.Value) int {
	switch a.Kind() {
	case reflect.String:
		return strings.Compare(a.String(), b.String())
	case reflect.Bool:
		return cmpBool(a.Bool(), b.Bool())
	case reflect.Uint32, reflect.Uint64:
		return cmp.Compare(a.Uint(), b.Uint())
	}
	return cmp.Compare(a.Int(), b.Int())
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// appendDuration appends d as a google.protobuf.Duration (its length
// and fields; the key is the caller's).
func appendDuration(b []byte, d *duration) ([]byte, error) {
	if !d.valid() {
		return b, fmt.Errorf("invalid duration (seconds %d, nanos %d)", d.Seconds, d.Nanos)
	}
	return appendNested(b, func(b []byte) ([]byte, error) {
		if d.Seconds != 0 {
			b = protowire.AppendVarint(append(b, 0x08), uint64(d.Seconds))
		}
		if d.Nanos != 0 {
			b = protowire.AppendVarint(append(b, 0x10), uint64(int64(d.Nanos)))
		}
		return b, nil
	})
}

// appendAny appends a google.protobuf.Any kept as its bytes (its length
// and fields; the key is the caller's).
func appendAny(b []byte, a *anyValue) ([]byte, error) {
	if a.JSON != nil {
		return b, errors.New("a google.protobuf.Any read from JSON has no protobuf encoding here (its type is not known)")
	}
	return appendNested(b, func(b []byte) ([]byte, error) {
		if a.TypeURL != "" {
			b = protowire.AppendString(append(b, 0x0a), a.TypeURL)
		}
		if len(a.Value) > 0 {
			b = protowire.AppendBytes(append(b, 0x12), a.Value)
		}
		return b, nil
	})
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
			var err error
			for i := range h.len {
				if b, err = f.appendPacked(b, unsafe.Add(h.data, uintptr(i)*f.elemSize)); err != nil {
					return b, err
				}
			}
			return b, nil
		})
	}
	var err error
	for i := range h.len {
		e := unsafe.Add(h.data, uintptr(i)*f.elemSize)
		if f.kind >= kMessage {
			b, err = f.appendRecord(b, e)
		} else {
			b, err = f.appendOne(b, e, true)
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendPacked appends one element of a packed field, without a key.
func (f *field) appendPacked(b []byte, p unsafe.Pointer) ([]byte, error) {
	switch f.kind {
	case kBool:
		return protowire.AppendVarint(b, protowire.EncodeBool(*(*bool)(p))), nil
	case kInt32, kSint32, kSfixed32:
		v := *(*int32)(p)
		if f.enum != nil {
			var err error
			if v, err = f.enum.numberOf((*enumValue)(p)); err != nil {
				return b, err
			}
		}
		return appendInt32(b, f.kind, v), nil
	case kInt64, kSint64, kSfixed64:
		return appendInt64(b, f.kind, *(*int64)(p)), nil
	case kUint32, kFixed32:
		return appendUint32(b, f.kind, *(*uint32)(p)), nil
	case kUint64, kFixed64:
		return appendUint64(b, f.kind, *(*uint64)(p)), nil
	case kFloat:
		return protowire.AppendFixed32(b, math.Float32bits(*(*float32)(p))), nil
	}
	return protowire.AppendFixed64(b, math.Float64bits(*(*float64)(p))), nil
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
	case map[string]any: // struct_value
		return appendNested(append(b, 0x2a), func(b []byte) ([]byte, error) { return appendStruct(b, v) })
	case []any: // list_value
		return appendNested(append(b, 0x32), func(b []byte) ([]byte, error) { return appendListValue(b, v) })
	}
	return b, fmt.Errorf("a google.protobuf.Value cannot hold %T", v)
}

// appendStruct appends the fields of a google.protobuf.Struct,
// Struct{map<string, Value> fields = 1}, in key order, as encoding/json
// writes a map: the same object is always the same bytes (the payload's
// hash).
func appendStruct(b []byte, v map[string]any) ([]byte, error) {
	var err error
	for _, k := range slices.Sorted(maps.Keys(v)) {
		e := v[k]
		if !utf8.ValidString(k) {
			return b, errUTF8
		}
		b, err = appendNested(append(b, 0x0a), func(b []byte) ([]byte, error) {
			b = protowire.AppendString(append(b, 0x0a), k)
			return appendNested(append(b, 0x12), func(b []byte) ([]byte, error) { return appendValue(b, e) })
		})
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendListValue appends the fields of a google.protobuf.ListValue,
// ListValue{repeated Value values = 1}.
func appendListValue(b []byte, v []any) ([]byte, error) {
	var err error
	for _, e := range v {
		if b, err = appendNested(append(b, 0x0a), func(b []byte) ([]byte, error) { return appendValue(b, e) }); err != nil {
			return b, err
		}
	}
	return b, nil
}
