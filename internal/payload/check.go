package payload

import (
	"fmt"
	"reflect"
	"unsafe"
)

// CheckItem checks that v (a *T, as NewItem or DecodeItem make) is item i
// of an answer: its key field (the item's first singular scalar field)
// holds the sample's item i mod Len's value. Items without such a field
// are checked by their number only.
func (p *Payload) CheckItem(i int, v any) error {
	return p.checkAt(i, reflect.ValueOf(v).UnsafePointer())
}

// Check checks every item of it as CheckItem does.
func (it Items) Check() error {
	for i := range it.n {
		if err := it.p.checkAt(i, it.at(i)); err != nil {
			return err
		}
	}
	return nil
}

func (p *Payload) checkAt(i int, got unsafe.Pointer) error {
	m := p.item
	if m.key < 0 {
		return nil
	}
	f := &m.fields[m.key]
	want := unsafe.Add(p.base.UnsafePointer(), uintptr(i%p.Len())*m.typ.Size()+f.offset)
	got = unsafe.Add(got, f.offset)
	same := false
	switch f.kind {
	case kBool:
		same = *(*bool)(got) == *(*bool)(want)
	case kInt64, kSint64, kSfixed64, kUint64, kFixed64, kDouble:
		same = *(*uint64)(got) == *(*uint64)(want)
	case kString:
		same = *(*string)(got) == *(*string)(want)
	default: // the 32-bit kinds
		same = *(*uint32)(got) == *(*uint32)(want)
	}
	if !same {
		fd := m.desc.Fields().ByNumber(f.num)
		return fmt.Errorf("item %d: field %s is not the sample's item %d's", i, fd.Name(), i%p.Len())
	}
	return nil
}
