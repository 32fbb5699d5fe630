package payload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Options say where the item's schema comes from: derived from the sample
// (zero), or the user's own .proto and the name of the item message in it.
type Options struct {
	Schema  string // a .proto file
	Message string // the item message, with or without its package
	// Items is the key of a sample object whose array holds the items
	// (--items); "" finds it (the only key holding an array of objects),
	// WholeObject takes the object as one item.
	Items string
}

// derivedFile is the name of the derived schema's file, serviceFile that of
// the service around a user's schema.
const (
	derivedFile = "meteorbench/payload.proto"
	serviceFile = "meteorbench/payload_service.proto"
)

// Derive reads a sample and derives its schema (meteorbench schema FILE),
// its items under key items as Options.Items says.
func Derive(file, items string) (*Derived, error) {
	s, err := readSample(file, items)
	if err != nil {
		return nil, err
	}
	return derive(file, s)
}

// Flags name a payload as serve's, run's and capacity's flags give it:
// --payload File, --schema and --message.
type Flags struct {
	File string
	Options
}

// Load loads the payload the flags name: nil without --payload. Without
// it, --message is refused, and so is --schema unless it describes
// something else (run's --grpc-method: schemaUsed). Every error is one
// line naming the flag: a usage error.
func (f Flags) Load(schemaUsed bool) (*Payload, error) {
	switch {
	case f.File != "":
		return Load(f.File, f.Options)
	case f.Message != "":
		return nil, errors.New("--message needs --payload")
	case f.Items != "":
		return nil, errors.New("--items needs --payload")
	case f.Schema != "" && !schemaUsed:
		return nil, errors.New("--schema needs --payload (with --message), --grpc-method or --endpoints")
	}
	return nil, nil
}

// Load reads a sample and readies it to serve. Every error is one line
// naming the place; a *PathError for the sample's own faults.
func Load(file string, o Options) (*Payload, error) {
	if (o.Schema == "") != (o.Message == "") {
		return nil, errors.New("payload: --schema and --message go together")
	}
	s, err := readSample(file, o.Items)
	if err != nil {
		return nil, err
	}
	var (
		files  linker.Files
		derivd = &Derived{}
	)
	if o.Schema == "" {
		if derivd, err = derive(file, s); err != nil {
			return nil, err
		}
		files, err = compile(map[string]string{derivedFile: derivd.Proto}, "", derivedFile)
	} else {
		files, err = compileUser(o.Schema, o.Message)
	}
	if err != nil {
		return nil, err
	}
	svcFile := files[0]
	p := &Payload{Name: baseName(file), File: file, Source: o}
	p.Proto, p.Warnings, p.Notes = derivd.Proto, derivd.Warnings, s.notes
	if o.Schema == "" {
		p.Notes = derivd.Notes
	}
	if p.Files, err = registry(svcFile); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	p.Service = svcFile.Services().ByName("Payload")
	list := svcFile.Messages().ByName("List")
	if p.Service == nil || list == nil {
		return nil, errors.New("payload: the service file has no Payload service or List message")
	}
	var itemDesc protoreflect.MessageDescriptor
	if fd := list.Fields().ByNumber(1); fd != nil && fd.IsList() {
		itemDesc = fd.Message()
	}
	if itemDesc == nil {
		// A schema given so, or a sample whose keys the derivation
		// could not tell apart (FuzzDeriveRoundTrip: items under the
		// empty key beside other keys).
		return nil, &PathError{File: file, Path: "$", Msg: fmt.Sprintf("the schema's List message has no field 1 that is a list of messages, the items (start from the one 'meteorbench schema %s' prints, or give --items)", file)}
	}
	b := newBuilder()
	b.written, b.numbers, b.bare = derivd.written, derivd.numbers, derivd.bare
	if o.Schema != "" {
		b.unwritten = absentKeys(itemDesc, s.items)
	}
	if p.item, err = b.build(itemDesc); err != nil {
		return nil, fmt.Errorf("payload %s: %w", o.Schema, err)
	}
	p.slice = reflect.SliceOf(p.item.typ)
	if s.wrap != nil {
		if list.Fields().Len() < len(s.wrap.keys) {
			return nil, &PathError{File: file, Path: "$", Msg: fmt.Sprintf("the items are under %q in an object with other keys, and schema %s has no List message for that object (start from the one 'meteorbench schema %s' prints)", s.wrap.Key(), o.Schema, file)}
		}
		lm, err := b.build(list)
		if err != nil {
			return nil, fmt.Errorf("payload %s: %w", o.Schema, err)
		}
		at := slices.IndexFunc(lm.fields, func(f field) bool { return f.num == 1 })
		if at < 0 || lm.typ.Field(at).Type != p.slice {
			// A list message whose field 1 is not the items' list (a
			// schema given so, or a sample whose keys the derivation
			// could not tell apart: FuzzDeriveRoundTrip found {"":[{}]}).
			return nil, &PathError{File: file, Path: "$", Msg: fmt.Sprintf("the items are under %q, and the schema's List message has no field 1 that is a list of %s (start from the one 'meteorbench schema %s' prints, or give --items)", s.wrap.Key(), itemDesc.FullName(), file)}
		}
		p.setWrapped(lm, at)
	}
	if p.base, err = p.read(file, s, itemDesc, o.Schema == ""); err != nil {
		return nil, err
	}
	if s.wrap != nil {
		if p.wrap, err = p.readWrapper(file, s.wrap, list, o.Schema == ""); err != nil {
			return nil, err
		}
	}
	var schema bytes.Buffer
	for _, f := range allFiles(svcFile) {
		fdp := protodesc.ToFileDescriptorProto(f)
		sb, _ := proto.MarshalOptions{Deterministic: true}.Marshal(fdp)
		schema.Write(sb)
	}
	if err := p.finish(schema.Bytes()); err != nil {
		return nil, fmt.Errorf("payload %s: %w", file, err)
	}
	return p, nil
}

// read reads the items with the protobuf JSON mapping into dynamic
// messages, and those, through their encoding, into the typed items. A
// derived schema's items are read straight into the typed items with
// encoding/json instead, many times faster: their JSON tags are the
// sample's keys and their types the sample's values'.
func (p *Payload) read(file string, s *sample, md protoreflect.MessageDescriptor, derived bool) (reflect.Value, error) {
	out := reflect.MakeSlice(p.slice, len(s.items), len(s.items))
	var buf []byte
	for i, raw := range s.items {
		path := s.itemPath(i)
		if derived {
			if err := json.Unmarshal(raw, out.Index(i).Addr().Interface()); err != nil {
				return reflect.Value{}, &PathError{File: file, Path: path, Msg: "does not match the derived schema: " + err.Error()}
			}
			continue
		}
		m := dynamicpb.NewMessage(md)
		if err := (protojson.UnmarshalOptions{}).Unmarshal(raw, m); err != nil {
			return reflect.Value{}, &PathError{File: file, Path: path, Msg: "does not match the schema: " + err.Error()}
		}
		var err error
		if buf, err = (proto.MarshalOptions{}).MarshalAppend(buf[:0], m); err == nil {
			err = p.item.unmarshal(buf, out.Index(i).Addr().UnsafePointer())
		}
		if err != nil {
			return reflect.Value{}, &PathError{File: file, Path: path, Msg: err.Error()}
		}
	}
	return out, nil
}

// readWrapper reads the object around the items, as read reads the items,
// into a new list message whose items field is left empty.
func (p *Payload) readWrapper(file string, w *wrapper, md protoreflect.MessageDescriptor, derived bool) (unsafe.Pointer, error) {
	var rest bytes.Buffer // the object without its items
	rest.WriteByte('{')
	for i, k := range w.keys {
		if i == w.index {
			continue
		}
		if rest.Len() > 1 {
			rest.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		rest.Write(kb)
		rest.WriteByte(':')
		rest.Write(w.vals[i])
	}
	rest.WriteByte('}')
	v := reflect.New(p.list.typ)
	if derived {
		if err := json.Unmarshal(rest.Bytes(), v.Interface()); err != nil {
			return nil, &PathError{File: file, Path: "$", Msg: "does not match the derived schema: " + err.Error()}
		}
		return v.UnsafePointer(), nil
	}
	m := dynamicpb.NewMessage(md)
	if err := (protojson.UnmarshalOptions{}).Unmarshal(rest.Bytes(), m); err != nil {
		return nil, &PathError{File: file, Path: "$", Msg: "does not match the schema: " + err.Error()}
	}
	b, err := proto.Marshal(m)
	if err == nil {
		err = p.list.unmarshal(b, v.UnsafePointer())
	}
	if err != nil {
		return nil, &PathError{File: file, Path: "$", Msg: err.Error()}
	}
	return v.UnsafePointer(), nil
}

// compile compiles file from sources (by name), the rest from dir.
func compile(sources map[string]string, dir, file string) (linker.Files, error) {
	acc := func(path string) (io.ReadCloser, error) {
		if s, ok := sources[path]; ok {
			return io.NopCloser(strings.NewReader(s)), nil
		}
		return os.Open(filepath.Join(dir, path))
	}
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: acc}),
	}
	files, err := c.Compile(context.Background(), file)
	if err != nil {
		return nil, fmt.Errorf("payload: schema: %s", oneLine(err.Error()))
	}
	return files, nil
}

// compileUser compiles the user's schema and the service around its item
// message.
func compileUser(schema, message string) (linker.Files, error) {
	dir, name := filepath.Split(schema)
	files, err := compile(nil, dir, name)
	if err != nil {
		return nil, err
	}
	md := findMessage(files[0], message)
	if md == nil {
		return nil, fmt.Errorf("payload: schema %s has no message %q", schema, message)
	}
	if svc := files[0].Services().ByName("Payload"); svc != nil && files[0].Package() == Package {
		// A schema meteorbench derived, given back (edited, maybe): it has
		// the service already.
		if list := files[0].Messages().ByName("List"); list == nil || list.Fields().ByNumber(1) == nil || list.Fields().ByNumber(1).Message() != md {
			return nil, fmt.Errorf("payload: schema %s: its List is not a list of %s", schema, md.FullName())
		}
		return files, nil
	}
	src := "syntax = \"proto3\";\n\npackage " + Package + ";\n\nimport " + strconv.Quote(name) + ";\n\n" +
		serviceText("."+string(md.FullName()), true)
	return compile(map[string]string{serviceFile: src}, dir, serviceFile)
}

// findMessage finds a message by its full name, or by its name alone.
func findMessage(f protoreflect.FileDescriptor, name string) protoreflect.MessageDescriptor {
	var found protoreflect.MessageDescriptor
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := range ms.Len() {
			m := ms.Get(i)
			if string(m.FullName()) == strings.TrimPrefix(name, ".") || (found == nil && string(m.Name()) == name) {
				found = m
			}
			walk(m.Messages())
		}
	}
	walk(f.Messages())
	return found
}

// allFiles is f and every file it imports, each once, imports first.
func allFiles(f protoreflect.FileDescriptor) []protoreflect.FileDescriptor {
	var out []protoreflect.FileDescriptor
	seen := map[string]bool{}
	var walk func(f protoreflect.FileDescriptor)
	walk = func(f protoreflect.FileDescriptor) {
		if seen[f.Path()] {
			return
		}
		seen[f.Path()] = true
		imps := f.Imports()
		for i := range imps.Len() {
			walk(imps.Get(i).FileDescriptor)
		}
		out = append(out, f)
	}
	walk(f)
	return out
}

// registry is a registry of f and its imports, rebuilt from descriptor
// protos so that reflection serves them as any other file.
func registry(f protoreflect.FileDescriptor) (*protoregistry.Files, error) {
	set := &descriptorpb.FileDescriptorSet{}
	for _, d := range allFiles(f) {
		set.File = append(set.File, protodesc.ToFileDescriptorProto(d))
	}
	return protodesc.NewFiles(set)
}

// serviceText is the list message (unless the caller writes its own),
// the fixed answers and the service of the payload whose item message is
// item.
func serviceText(item string, list bool) string {
	text := ""
	if list {
		text = `
// The list answer and upload: the items, as the contract's list is.
message List {
  repeated ` + item + ` items = 1;
}
`
	}
	return text + `
message EmptyRequest {}

message Version {
  string api_version = 1;
}

message StatusResponse {
  string status = 1;
}

// The contract's four calls, with the payload.
service Payload {
  // The small payload: "API Version 1.0".
  rpc GetVersion(EmptyRequest) returns (Version) {}
  // The items, one message each.
  rpc GetLargePayload(EmptyRequest) returns (stream ` + item + `) {}
  // The items in one message.
  rpc GetLargePayloadAsList(EmptyRequest) returns (List) {}
  // Uploads items; answers "SUCCESS" once all of them are decoded.
  rpc PostLargePayload(List) returns (StatusResponse) {}
}
`
}

// absentKeys are md's scalar fields whose key (JSON or .proto name) no
// item has at its top level: a given schema's fields the sample never
// writes.
func absentKeys(md protoreflect.MessageDescriptor, items []json.RawMessage) map[protoreflect.FullName]bool {
	seen := map[string]bool{}
	for _, raw := range items {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil // not objects: nothing to say
		}
		for k := range obj {
			seen[k] = true
		}
	}
	out := map[protoreflect.FullName]bool{}
	fds := md.Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		if fd.IsList() || fd.IsMap() || fd.Message() != nil || fd.HasPresence() {
			continue
		}
		if !seen[fd.JSONName()] && !seen[string(fd.Name())] {
			out[fd.FullName()] = true
		}
	}
	return out
}
