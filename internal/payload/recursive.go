package payload

// Recursive messages. reflect.StructOf cannot build a type that holds
// itself, so a message's reference back to a message still being built
// (itself, or one of a cycle of messages) is a recRef: a pointer to the
// message, of a Go type of its own per recursive message, taken from a
// fixed set (recslots.go) whose methods find the message's type by slot.
// The codec reads and writes a recRef as the *S it is; the JSON codecs
// call its methods, which encode and decode the message with encoding/json
// (whatever codec encodes the rest): a level of a recursive message is
// scanned once more per level above it.

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// recSlot is a marker type: which slot a recRef's message is in.
type recSlot interface{ slot() int }

// recRef is a reference to a recursive message: a *S, nil for none.
type recRef[S recSlot] struct{ p unsafe.Pointer }

func recTypesOf[S recSlot]() (single, repeated reflect.Type) {
	t := reflect.TypeFor[recRef[S]]()
	return t, reflect.SliceOf(t)
}

// slotType is the message of slot S.
func slotType[S recSlot]() *msgType {
	var s S
	return recSlots[s.slot()].Load()
}

// MarshalJSON implements json.Marshaler.
func (r recRef[S]) MarshalJSON() ([]byte, error) {
	if r.p == nil {
		return []byte("null"), nil
	}
	return json.Marshal(reflect.NewAt(slotType[S]().typ, r.p).Interface())
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *recRef[S]) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		r.p = nil
		return nil
	}
	v := reflect.New(slotType[S]().typ)
	if err := json.Unmarshal(b, v.Interface()); err != nil {
		return err
	}
	r.p = v.UnsafePointer()
	return nil
}

var (
	recMu    sync.Mutex
	recSlots [len(recTypes)]atomic.Pointer[msgType]
	// recKeys are the slots taken, by the message they hold (its
	// name, file and how it was built): the same schema loaded again
	// takes no new slot.
	recKeys = map[string]int{}
)

// recSlotFor is the slot of message md as builder b builds it: taken
// now, its type set by setSlot once built.
func (b *builder) recSlotFor(md protoreflect.MessageDescriptor) (int, error) {
	fdp, _ := proto.MarshalOptions{Deterministic: true}.Marshal(protodesc.ToFileDescriptorProto(md.ParentFile()))
	h := sha256.New()
	h.Write(fdp)
	fmt.Fprint(h, b.quoted64, b.written, b.numbers)
	key := string(md.FullName()) + "\x00" + string(h.Sum(nil))
	recMu.Lock()
	defer recMu.Unlock()
	if s, ok := recKeys[key]; ok {
		return s, nil
	}
	if len(recKeys) == len(recSlots) {
		return 0, fmt.Errorf("message %s is recursive, and this process has built the %d recursive messages it can", md.FullName(), len(recSlots))
	}
	s := len(recKeys)
	recKeys[key] = s
	return s, nil
}

// setSlot puts m in slot s, once (the same schema built again has the
// same Go type: the first stays).
func setSlot(s int, m *msgType) {
	recSlots[s].CompareAndSwap(nil, m)
}
