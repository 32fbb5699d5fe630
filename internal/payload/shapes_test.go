package payload_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meteorbench/meteorbench/internal/payload"
	sp "github.com/meteorbench/meteorbench/internal/payload/internal/shapespb"
	"github.com/meteorbench/meteorbench/internal/rusage"
)

// shape is one kind of schema, many messages of it in one list.
type shape struct {
	name string
	list proto.Message
}

// shapes are the lists the compiled codec is checked and measured on,
// built with the code protoc-gen-go generated (internal/shapespb).
func shapes() []shape {
	var scalars sp.Scalarss
	for i := range 200 {
		n := int64(i)
		s := &sp.Scalars{I32: int32(-i), I64: n * 1e12, U32: uint32(i), U64: uint64(n) << 40, S32: int32(-i), S64: -n * 1e9,
			F32: uint32(i), F64: uint64(i), Sf32: int32(-i), Sf64: -n, Fl: float32(i) / 4, Db: float64(i) / 3, B: i%2 == 0,
			S: fmt.Sprintf("item %d é", i), By: []byte{byte(i), 0, 1}, Color: sp.Color(i % 4),
			Packed: []int64{n, n * 1000, -n}, Unpacked: []int32{int32(i), 2}, Doubles: []float64{1.5, float64(i)},
			Colors: []sp.Color{sp.Color_RED, sp.Color_BLUE}, Tags: []string{"a", "b"}}
		if i%3 == 0 {
			s.Opt, s.OptN = proto.String(""), proto.Int64(0)
		}
		scalars.Items = append(scalars.Items, s)
	}
	var catalogs sp.Catalogs
	for c := range 10 {
		ct := &sp.Catalog{Events: map[string]*sp.Event{}, AreaNames: map[string]string{}, ById: map[int64]string{},
			Prices: map[int32]float64{}, Colors: map[uint64]sp.Color{}, Flags: map[bool]int64{true: 1, false: int64(c)},
			Times: map[string]*timestamppb.Timestamp{"start": timestamppb.New(time.Unix(1700000000+int64(c), 5000))}}
		for e := range 50 {
			id := int64(138586341 + 1000*c + e)
			ct.Events[fmt.Sprint(id)] = &sp.Event{Id: id, Name: fmt.Sprintf("event %d", e), SubTopicIds: []int64{1, id}, Color: sp.Color(e % 4)}
			ct.AreaNames[fmt.Sprint(e)] = fmt.Sprintf("area %d", e)
			ct.ById[id] = "x"
			ct.Prices[int32(e)] = float64(e) * 1.25
			ct.Colors[uint64(id)] = sp.Color(e % 4)
		}
		catalogs.Items = append(catalogs.Items, ct)
	}
	var forest sp.Forest
	var tree func(d, i int) *sp.Node
	tree = func(d, i int) *sp.Node {
		n := &sp.Node{Name: fmt.Sprintf("n%d.%d", d, i), Size: int64(d*100 + i)}
		if d < 5 {
			for j := range 3 {
				n.Children = append(n.Children, tree(d+1, j))
			}
		}
		if d == 2 {
			n.Named = map[string]*sp.Node{"leaf": {Name: "leaf"}}
		}
		return n
	}
	for i := range 4 {
		forest.Trees = append(forest.Trees, tree(0, i))
	}
	var exprs sp.Exprs
	var expr func(d int) *sp.Expr
	expr = func(d int) *sp.Expr {
		switch {
		case d == 0:
			return &sp.Expr{Kind: &sp.Expr_Num{Num: 2.5}}
		case d%3 == 0:
			return &sp.Expr{Kind: &sp.Expr_Neg{Neg: expr(d - 1)}}
		}
		return &sp.Expr{Kind: &sp.Expr_Call{Call: &sp.Call{Fn: "add", Args: []*sp.Expr{expr(d - 1), {Kind: &sp.Expr_Ident{Ident: "x"}}}}}}
	}
	for i := range 100 {
		exprs.Items = append(exprs.Items, expr(i%12))
	}
	var features sp.Features
	for i := range 20 {
		g := &sp.Feature_Geometry{Type: "MultiPolygon"}
		for range 2 {
			poly := &sp.Feature_Geometry_Polygon{}
			for range 2 {
				ring := &sp.Feature_Geometry_Ring{}
				for k := range 100 {
					ring.V = append(ring.V, 10+float64(k)/7, 50-float64(i)/3)
				}
				poly.Rings = append(poly.Rings, ring)
			}
			g.Polygons = append(g.Polygons, poly)
		}
		features.Items = append(features.Items, &sp.Feature{Type: "Feature", Geometry: g,
			Properties: &sp.Feature_Properties{Name: fmt.Sprint("f", i), Meta: &sp.Feature_Properties_Meta{Source: &sp.Feature_Properties_Meta_Source{Name: "osm", Year: 2024}}}})
	}
	var wkts sp.Wkts
	for i := range 100 {
		st, _ := structpb.NewStruct(map[string]any{"a": float64(i), "b": []any{"x", true, nil}, "c": map[string]any{"d": "e"}})
		lv, _ := structpb.NewList([]any{1.5, "s"})
		any, _ := anypb.New(wrapperspb.String("inside"))
		wkts.Items = append(wkts.Items, &sp.Wkt{Ts: timestamppb.New(time.Unix(int64(1e9+i), int64(i)*1000)), D: durationpb.New(time.Duration(i)*time.Second + 1500*time.Millisecond),
			I64W: wrapperspb.Int64(int64(i) << 33), Sw: wrapperspb.String(""), Bw: wrapperspb.Bool(i%2 == 0), Dw: wrapperspb.Double(0.25),
			St: st, V: structpb.NewStringValue("v"), Lv: lv, Any: any,
			Tss: []*timestamppb.Timestamp{timestamppb.New(time.Unix(0, 0)), timestamppb.New(time.Unix(-1e9, 7))},
			Ds:  []*durationpb.Duration{durationpb.New(-1500 * time.Millisecond)}, U32W: wrapperspb.UInt32(7), Byw: wrapperspb.Bytes([]byte("b"))})
	}
	return []shape{{"scalars", &scalars}, {"maps", &catalogs}, {"recursive", &forest}, {"oneof-mutual", &exprs}, {"nested-arrays", &features}, {"well-known", &wkts}}
}

// The compiled codec decodes every shape to what generated code decodes:
// encoded again, the same message; and the protobuf JSON mapping of it
// (protojson, as a REST answer would be: enum names, 64-bit integers as
// strings, durations, wrappers' bare values, map keys as strings) decodes
// strictly into the compiled type's JSON mapping (Others), and that,
// encoded as protobuf, is the same message again.
func TestCompiledShapes(t *testing.T) {
	for _, s := range shapes() {
		t.Run(s.name, func(t *testing.T) {
			c, err := payload.Compile(s.list.ProtoReflect().Descriptor())
			if err != nil {
				t.Fatal(err)
			}
			wire, err := proto.MarshalOptions{Deterministic: true}.Marshal(s.list)
			if err != nil {
				t.Fatal(err)
			}
			d := c.New()
			if err := d.UnmarshalProto(wire); err != nil {
				t.Fatal(err)
			}
			again, err := d.AppendProto(nil)
			if err != nil {
				t.Fatal(err)
			}
			back := s.list.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(again, back); err != nil || !proto.Equal(back, s.list) {
				t.Fatalf("decoded and encoded again: not the message (err %v, %d B, want %d B)", err, len(again), len(wire))
			}
			if err := d.UnmarshalProto(wire[:len(wire)-1]); err == nil {
				t.Error("a truncated list decoded")
			}

			js, err := protojson.Marshal(s.list)
			if err != nil {
				t.Fatal(err)
			}
			q := c.Others()[0] // 64-bit integers as strings
			v, ok := q.JSONTarget('{')
			dec := json.NewDecoder(bytes.NewReader(js))
			dec.DisallowUnknownFields()
			if err := dec.Decode(v); !ok || err != nil {
				t.Fatalf("the JSON mapping does not decode into the compiled type: %v", err)
			}
			if s.name == "well-known" {
				// An Any read from JSON keeps its JSON: no protobuf without its type.
				clearAny(reflect.ValueOf(v).Elem())
				back := s.list.ProtoReflect().New().Interface().(*sp.Wkts)
				proto.Merge(back, s.list)
				for _, w := range back.Items {
					w.Any = nil
				}
				s.list = back
			}
			pb, err := q.AppendValue(nil, v)
			if err != nil {
				t.Fatal(err)
			}
			fromJSON := s.list.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(pb, fromJSON); err != nil || !proto.Equal(fromJSON, s.list) {
				t.Errorf("JSON -> compiled type -> protobuf is not the message (err %v)", err)
			}
			// Under the .proto field names (protojson's UseProtoNames): the
			// same message, read so.
			byName, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(s.list)
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := c.Others()[2].JSONTarget('{'); decodeStrict(byName, n) != nil {
				t.Errorf("the JSON under .proto names does not decode: %v", decodeStrict(byName, n))
			}
			// The compiled type written as JSON reads back with protojson.
			out, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if err := protojson.Unmarshal(out, s.list.ProtoReflect().New().Interface()); err != nil {
				t.Errorf("protojson cannot read the compiled type's JSON: %v\n%.300s", err, out)
			}
		})
	}
}

// clearAny empties the Any fields (F10) of the decoded Wkts.
func clearAny(list reflect.Value) {
	items := list.Field(0)
	for i := range items.Len() {
		items.Index(i).FieldByName("F10").SetZero()
	}
}

// BenchmarkDecode decodes each shape's list with the code protoc-gen-go
// generated and with the compiled codec, the same bytes: compare compiled
// with generated per shape. cpu-ns/op is the process's CPU time (getrusage:
// the collector's work included), steadier than ns/op on a machine shared
// with other work.
func BenchmarkDecode(b *testing.B) {
	for _, s := range shapes() {
		wire, err := proto.Marshal(s.list)
		if err != nil {
			b.Fatal(err)
		}
		c, err := payload.Compile(s.list.ProtoReflect().Descriptor())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(s.name+"/generated", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			m := s.list.ProtoReflect().New().Interface()
			cpu := rusage.CPU()
			for b.Loop() {
				proto.Reset(m)
				if err := proto.Unmarshal(wire, m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rusage.CPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
		b.Run(s.name+"/compiled", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			d := c.New()
			cpu := rusage.CPU()
			for b.Loop() {
				if err := d.UnmarshalProto(wire); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rusage.CPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// decodeStrict decodes js into v with no member v lacks.
func decodeStrict(js []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
