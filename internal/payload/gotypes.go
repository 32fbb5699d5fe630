package payload

// The Go types the codec gives what has no Go type of its own that the
// JSON codecs would read and write as the protobuf JSON mapping does:
// enums (a name or a number), bool map keys, Duration, Any, and the
// deepest level of a recursive message.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"reflect"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

var (
	enumType     = reflect.TypeFor[enumValue]()
	boolKeyType  = reflect.TypeFor[boolKey]()
	durationType = reflect.TypeFor[duration]()
)

// enumValue is an enum field's value: its number, and its name when it
// has one (decoded from protobuf, or read from JSON). Its JSON is the
// name, or the number without one, as protojson writes it; it reads
// either.
type enumValue struct {
	N    int32 // first: the codec reads and writes it as an int32
	Name string
}

// MarshalJSON implements json.Marshaler.
func (e enumValue) MarshalJSON() ([]byte, error) {
	if e.Name != "" {
		return strconv.AppendQuote(nil, e.Name), nil
	}
	return strconv.AppendInt(nil, int64(e.N), 10), nil
}

// UnmarshalJSON implements json.Unmarshaler: a name or a number.
func (e *enumValue) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*e = enumValue{Name: s}
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 32)
	if err != nil {
		return fmt.Errorf("an enum value must be a name or a 32-bit integer, not %s", b)
	}
	*e = enumValue{N: int32(n)}
	return nil
}

// enumInfo is an enum's values, by number and by name.
type enumInfo struct {
	desc   protoreflect.EnumDescriptor
	dense  []string // names of the numbers 0..len-1 ("" for a gap)
	names  map[protoreflect.EnumNumber]string
	number map[string]int32
}

func newEnumInfo(ed protoreflect.EnumDescriptor) *enumInfo {
	e := &enumInfo{desc: ed, names: map[protoreflect.EnumNumber]string{}, number: map[string]int32{}}
	vs := ed.Values()
	for i := range vs.Len() {
		v := vs.Get(i)
		if _, dup := e.names[v.Number()]; !dup { // an alias: the first name
			e.names[v.Number()] = string(v.Name())
		}
		e.number[string(v.Name())] = int32(v.Number())
		if n := v.Number(); n >= 0 && n < 256 {
			for len(e.dense) <= int(n) {
				e.dense = append(e.dense, "")
			}
			if e.dense[n] == "" {
				e.dense[n] = string(v.Name())
			}
		}
	}
	return e
}

// name is number n's name, "" for a number the enum does not have.
func (e *enumInfo) name(n int32) string {
	if n >= 0 && int(n) < len(e.dense) {
		return e.dense[n]
	}
	return e.names[protoreflect.EnumNumber(n)]
}

// numberOf is v's number: its name's, when it has a name.
func (e *enumInfo) numberOf(v *enumValue) (int32, error) {
	if v.Name == "" {
		return v.N, nil
	}
	n, ok := e.number[v.Name]
	if !ok {
		return 0, fmt.Errorf("enum %s has no value %q", e.desc.FullName(), v.Name)
	}
	return n, nil
}

// quotedInt64 and quotedUint64 are 64-bit integers whose JSON is a
// string, as the protobuf JSON mapping writes them; they read a number too.
type (
	quotedInt64  int64
	quotedUint64 uint64
)

// quotedType is the quoted type of int64 (false) and uint64 (true).
var quotedType = map[bool]reflect.Type{false: reflect.TypeFor[quotedInt64](), true: reflect.TypeFor[quotedUint64]()}

// MarshalJSON implements json.Marshaler.
func (n quotedInt64) MarshalJSON() ([]byte, error) {
	return strconv.AppendQuote(nil, strconv.FormatInt(int64(n), 10)), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (n *quotedInt64) UnmarshalJSON(b []byte) error {
	s, ok := unquoteNumber(b)
	if !ok {
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not a 64-bit integer: %s", b)
	}
	*n = quotedInt64(v)
	return nil
}

// MarshalJSON implements json.Marshaler.
func (n quotedUint64) MarshalJSON() ([]byte, error) {
	return strconv.AppendQuote(nil, strconv.FormatUint(uint64(n), 10)), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (n *quotedUint64) UnmarshalJSON(b []byte) error {
	s, ok := unquoteNumber(b)
	if !ok {
		return nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not a 64-bit unsigned integer: %s", b)
	}
	*n = quotedUint64(v)
	return nil
}

// unquoteNumber is a JSON number's digits, quoted or not; ok is false
// for null.
func unquoteNumber(b []byte) (string, bool) {
	if string(b) == "null" {
		return "", false
	}
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		b = b[1 : len(b)-1]
	}
	return string(b), true
}

// boolKey is a map's bool key: JSON writes it as "true" or "false".
type boolKey bool

// MarshalText implements encoding.TextMarshaler.
func (k boolKey) MarshalText() ([]byte, error) { return strconv.AppendBool(nil, bool(k)), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *boolKey) UnmarshalText(b []byte) error {
	v, err := strconv.ParseBool(string(b))
	*k = boolKey(v)
	return err
}

// duration is a google.protobuf.Duration; its JSON is "1.5s".
type duration struct {
	Seconds int64
	Nanos   int32
}

// maxDurationSeconds is Duration's bound, about 10,000 years.
const maxDurationSeconds = 315576000000

func (d duration) valid() bool {
	return d.Seconds >= -maxDurationSeconds && d.Seconds <= maxDurationSeconds && d.Nanos > -1e9 && d.Nanos < 1e9 &&
		(d.Seconds == 0 || d.Nanos == 0 || (d.Seconds < 0) == (d.Nanos < 0))
}

// MarshalJSON implements json.Marshaler.
func (d duration) MarshalJSON() ([]byte, error) {
	if !d.valid() {
		return nil, fmt.Errorf("invalid duration (seconds %d, nanos %d)", d.Seconds, d.Nanos)
	}
	sign := ""
	s, n := d.Seconds, d.Nanos
	if s < 0 || n < 0 {
		sign, s, n = "-", -s, -n
	}
	out := sign + strconv.FormatInt(s, 10)
	if n != 0 {
		frac := strings.TrimRight(fmt.Sprintf("%09d", n), "0")
		for len(frac)%3 != 0 { // 3, 6 or 9 digits, as protojson writes
			frac += "0"
		}
		out += "." + frac
	}
	return strconv.AppendQuote(nil, out+"s"), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (d *duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a google.protobuf.Duration is a string such as \"1.5s\": %w", err)
	}
	bad := fmt.Errorf("%q is not a google.protobuf.Duration (\"1.5s\")", s)
	num, ok := strings.CutSuffix(s, "s")
	neg := strings.HasPrefix(num, "-")
	num = strings.TrimPrefix(num, "-")
	whole, frac, _ := strings.Cut(num, ".")
	if !ok || whole == "" || len(frac) > 9 || strings.ContainsAny(whole+frac, "+-") {
		return bad
	}
	sec, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return bad
	}
	var nanos int64
	if frac != "" {
		if nanos, err = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil {
			return bad
		}
	}
	if neg {
		sec, nanos = -sec, -nanos
	}
	v := duration{Seconds: sec, Nanos: int32(nanos)}
	if !v.valid() {
		return bad
	}
	*d = v
	return nil
}

// anyValue is a google.protobuf.Any kept as its bytes: its type URL and
// value, not decoded further. Read from JSON, it keeps the JSON, which
// has no protobuf encoding without the type it names.
type anyValue struct {
	TypeURL string
	Value   []byte
	JSON    json.RawMessage
}

// MarshalJSON implements json.Marshaler: the JSON it was read from, or
// the type URL and the value's bytes in base64.
func (a *anyValue) MarshalJSON() ([]byte, error) {
	if a.JSON != nil {
		return a.JSON, nil
	}
	return json.Marshal(map[string]string{"@type": a.TypeURL, "value": base64.StdEncoding.EncodeToString(a.Value)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (a *anyValue) UnmarshalJSON(b []byte) error {
	if !json.Valid(b) {
		return errors.New("a google.protobuf.Any is not valid JSON")
	}
	a.JSON = append(json.RawMessage{}, b...)
	return nil
}
