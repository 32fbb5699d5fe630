package payload_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/payload/payloadtest"
)

// A message compiled from its descriptor decodes the 1000 records to the
// same values generated code does: encoded again, the same bytes; and the
// REST answer of the same question (the records as a JSON array) decodes
// into its only field's typed values, equal to the protobuf ones.
func TestCompiledDecodesAsGenerated(t *testing.T) {
	want, raw, c := payloadtest.CompiledList(t)
	d := c.New()
	if err := d.UnmarshalProto(raw); err != nil {
		t.Fatal(err)
	}
	again, err := d.AppendProto(nil)
	if err != nil {
		t.Fatal(err)
	}
	back := &pb.MeteoriteLandingList{}
	if err := proto.Unmarshal(again, back); err != nil || !proto.Equal(back, want) {
		t.Fatalf("compiled decode, encoded again, is not the list (err %v)", err)
	}
	if err := d.UnmarshalProto(raw[:len(raw)-3]); err == nil {
		t.Error("a truncated list decoded without error")
	}

	// The REST side: the JSON array of the records is the list's only
	// field; an object is the list itself.
	js, err := protojson.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var wrapped map[string]json.RawMessage
	if err := json.Unmarshal(js, &wrapped); err != nil {
		t.Fatal(err)
	}
	arr := wrapped["MeteoriteLandings"]
	v, ok := c.JSONTarget('[')
	if !ok {
		t.Fatal("no typed target for an array")
	}
	if err := json.Unmarshal(arr, v); err != nil {
		t.Fatal(err)
	}
	got := reflect.ValueOf(v).Elem()
	if got.Len() != len(want.MeteoriteLandings) {
		t.Fatalf("%d records from JSON, want %d", got.Len(), len(want.MeteoriteLandings))
	}
	obj, ok := c.JSONTarget('{')
	if !ok || json.Unmarshal(js, obj) != nil || reflect.ValueOf(obj).Elem().Field(0).Len() != len(want.MeteoriteLandings) {
		t.Errorf("the list as a JSON object: ok %v", ok)
	}
	// Item 0 from JSON equals item 0 decoded from protobuf.
	if !reflect.DeepEqual(got.Index(0).Interface(), reflect.ValueOf(d.Value()).Elem().Field(0).Index(0).Interface()) {
		t.Errorf("record 0 from JSON %+v, from protobuf %+v", got.Index(0), reflect.ValueOf(d.Value()).Elem().Field(0).Index(0))
	}
	if _, ok := c.JSONTarget('"'); ok {
		t.Error("a string is no list's JSON")
	}
	ver, err := payload.Compile((&pb.Version{}).ProtoReflect().Descriptor())
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := ver.JSONTarget('"'); !ok || json.Unmarshal([]byte(`"API Version 1.0"`), s) != nil || *s.(*string) != "API Version 1.0" {
		t.Errorf("a one-string message answered as the string: %v", ok)
	}
}

// Maps and the mutually recursive Struct/Value/ListValue compile; proto2
// groups are refused, for dynamicpb (TestSchemaErrors).
func TestCompileMaps(t *testing.T) {
	var md protoreflect.MessageDescriptor = (&pb.MeteoriteLanding{}).ProtoReflect().Descriptor()
	if _, err := payload.Compile(md); err != nil {
		t.Fatalf("a record: %v", err)
	}
	// structpb.Struct is a map<string, Value>, a Value a oneof holding
	// Structs and ListValues.
	for _, m := range []proto.Message{&structpb.Struct{}, &structpb.Value{}, &structpb.ListValue{}} {
		if _, err := payload.Compile(m.ProtoReflect().Descriptor()); err != nil {
			t.Errorf("%T: %v", m, err)
		}
	}
}
