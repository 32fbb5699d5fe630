package payload

// Any message compiled at run time: the Go type and codec table the
// payload's items get (types.go), for a message a user's own gRPC method
// answers (run --grpc-method, --endpoints). Its answers decode as fast as
// generated code does, into typed values, and those typed values are also
// what the same message's JSON mapping decodes into on the REST side.

import (
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Compiled is a message type compiled from its descriptor: read-only,
// shared by every caller.
type Compiled struct {
	m *msgType
	// others are the same message read from JSON another way (Others),
	// built when first asked for; nil in one of them.
	others *others
}

// others are a message's other JSON readings, each built once.
type others struct {
	once sync.Once
	list []*Compiled
}

// Compile builds md's Go type and codec: proto3 as generated code has it
// (maps, oneofs, optional, recursive messages, enums, the well-known
// types). It fails (one line) on what the compiled codec does not handle:
// proto2 groups and field numbers above 4096; a caller then decodes with
// dynamicpb. Extensions are not decoded (kept out, as unknown fields).
func Compile(md protoreflect.MessageDescriptor) (*Compiled, error) {
	m, err := newBuilder().build(md)
	if err != nil {
		return nil, err
	}
	return &Compiled{m: m, others: &others{}}, nil
}

// Others are the same message read from JSON the other ways the protobuf
// JSON mapping allows a server to write it, built when first asked for:
// 64-bit integers as strings ("123", as protojson and Python's json_format
// write them; 123 is read too), the fields under their .proto names
// ("card_last4" instead of "cardLast4", as protojson's UseProtoNames and
// many REST frameworks write them), and both. Nil on one of them.
func (c *Compiled) Others() []*Compiled {
	if c.others == nil {
		return nil
	}
	c.others.once.Do(func() {
		for _, o := range []struct{ quoted, names bool }{{true, false}, {false, true}, {true, true}} {
			b := newBuilder()
			b.quoted64, b.protoNames = o.quoted, o.names
			if m, err := b.build(c.m.desc); err == nil {
				c.others.list = append(c.others.list, &Compiled{m: m})
			}
		}
	})
	return c.others.list
}

// Name is the message's full name.
func (c *Compiled) Name() protoreflect.FullName { return c.m.desc.FullName() }

// Type is the message's Go struct type: its fields tagged with their JSON
// names, as the protobuf JSON mapping writes them.
func (c *Compiled) Type() reflect.Type { return c.m.typ }

// New is a decoded message to receive into: a Message of a new zero
// value.
func (c *Compiled) New() *Decoded {
	return &Decoded{c: c, p: newOf(c.m)}
}

// Decoded is one message of a compiled type, a payload Message: Codec
// decodes an answer into it with the compiled codec.
type Decoded struct {
	c *Compiled
	p unsafe.Pointer // *T
}

// Value is the decoded message as a *T.
func (d *Decoded) Value() any { return reflect.NewAt(d.c.m.typ, d.p).Interface() }

// Reset makes the message zero again, for the next message of a stream.
func (d *Decoded) Reset() { d.p = newOf(d.c.m) }

// AppendProto implements Message.
func (d *Decoded) AppendProto(b []byte) ([]byte, error) { return d.c.m.append(b, d.p) }

// UnmarshalProto implements Message: it decodes b into a new value, as
// the generated code's Unmarshal does into a reset message.
func (d *Decoded) UnmarshalProto(b []byte) error {
	d.p = newOf(d.c.m)
	if err := d.c.m.unmarshal(b, d.p); err != nil {
		return fmt.Errorf("%s: %w", d.c.m.desc.FullName(), err)
	}
	return nil
}

// JSONTarget is the typed value the JSON mapping of the message decodes
// into, for a JSON answer whose first byte is first: a JSON object is the
// message itself (*T); an array, a string, a number or a boolean is the
// message's only field (as REST services answer a list message's items as
// a bare array, or a one-string reply as the string), when it has exactly
// one. ok is false when the answer cannot be this message's.
func (c *Compiled) JSONTarget(first byte) (v any, ok bool) {
	if first == '{' {
		return reflect.New(c.m.typ).Interface(), true
	}
	if first == 'n' || c.m.typ.NumField() != 1 {
		return nil, false
	}
	f := c.m.typ.Field(0)
	if (first == '[') != (f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() != reflect.Uint8) {
		return nil, false // bytes are a base64 string
	}
	return reflect.New(f.Type).Interface(), true
}

// AppendValue appends the protobuf encoding of v, a *T (of New's Value or
// JSONTarget's '{').
func (c *Compiled) AppendValue(b []byte, v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	if rv.Type() != reflect.PointerTo(c.m.typ) {
		return b, fmt.Errorf("%s: %T is not its compiled type", c.Name(), v)
	}
	return c.m.append(b, rv.UnsafePointer())
}
