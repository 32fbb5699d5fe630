package payload

// The round-trip check (meteorbench schema FILE --check): every item of a
// sample, and the object around a wrapped list, through each JSON codec
// and the protobuf codec and back, compared with the sample's own values.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/internal/jsoncodec"
)

// maxDiffs bounds the differences a check lists per codec.
const maxDiffs = 20

// RoundTrip is what a round-trip check found with one JSON codec.
type RoundTrip struct {
	Codec string
	// Diffs are the values that did not come back as the sample has
	// them (at most maxDiffs; Count is how many there were).
	Diffs []string
	Count int
	// JSONBytes and ProtoBytes are the list answer's sizes.
	JSONBytes, ProtoBytes int
}

// OK reports whether every value came back.
func (r *RoundTrip) OK() bool { return r.Count == 0 }

func (r *RoundTrip) diff(path, format string, args ...any) {
	r.Count++
	if len(r.Diffs) < maxDiffs {
		r.Diffs = append(r.Diffs, path+": "+fmt.Sprintf(format, args...))
	}
}

// CheckRoundTrip reads the sample again and, with each codec, decodes the
// list answer the sample is (its items, in the object around them if
// any) into the payload's types, encodes that as protobuf, compares it
// with the loaded sample's encoding, decodes it, encodes it as the server
// answers JSON, and compares every value with the sample's: numbers
// exactly, strings, booleans, nulls, empty arrays and keys as they are.
func (p *Payload) CheckRoundTrip(codecs []*jsoncodec.Codec) ([]*RoundTrip, error) {
	s, err := readSample(p.File, p.Source.Items)
	if err != nil {
		return nil, err
	}
	// The list answer the sample is, and its values.
	var src bytes.Buffer
	switch {
	case s.wrap != nil:
		src.WriteByte('{')
		for i, k := range s.wrap.keys {
			if i > 0 {
				src.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			src.Write(kb)
			src.WriteByte(':')
			src.Write(s.wrap.vals[i])
		}
		src.WriteByte('}')
	default:
		src.WriteByte('[')
		for i, it := range s.items {
			if i > 0 {
				src.WriteByte(',')
			}
			src.Write(it)
		}
		src.WriteByte(']')
	}
	want, err := decodeValueJSON(src.Bytes())
	if err != nil {
		return nil, &PathError{File: p.File, Path: "$", Msg: "not JSON: " + err.Error()}
	}
	one := s.wrap == nil && !s.array // one object: the list of it
	if one {
		want = want.([]node)[0]
	}
	loaded, err := p.Items(0).AppendList(nil)
	if err != nil {
		return nil, fmt.Errorf("payload %s: %w", p.File, err)
	}
	var out []*RoundTrip
	for _, c := range codecs {
		r := &RoundTrip{Codec: c.Name}
		out = append(out, r)
		v := p.NewList()
		if err := c.Unmarshal(src.Bytes(), v); err != nil {
			r.diff("$", "%s cannot decode the sample into the schema's types: %v", c.Name, err)
			continue
		}
		pb, err := p.Decoded(v).AppendList(nil)
		if err != nil {
			r.diff("$", "protobuf: %v", err)
			continue
		}
		r.ProtoBytes = len(pb)
		if !bytes.Equal(pb, loaded) {
			r.diff("$", "protobuf of the items %s decoded: %d bytes, the sample's (read by encoding/json): %d bytes", c.Name, len(pb), len(loaded))
		}
		back, err := p.DecodeList(pb)
		if err != nil {
			r.diff("$", "protobuf does not decode: %v", err)
			continue
		}
		js, err := listJSON(back, c)
		if err != nil {
			r.diff("$", "%s cannot encode the decoded items: %v", c.Name, err)
			continue
		}
		r.JSONBytes = len(js)
		got, err := decodeValueJSON(js)
		if err != nil {
			r.diff("$", "%s wrote JSON that does not decode: %v", c.Name, err)
			continue
		}
		if one {
			g, ok := got.([]node)
			if !ok || len(g) != 1 {
				r.diff("$", "one item in, %s out", short(got))
				continue
			}
			got = g[0]
		}
		compareJSON(r, "$", want, got)
	}
	return out, nil
}

// listJSON is the list answer's JSON as the server writes it with codec
// c (restanswer.go's writeArrayJSON): the array of the items, in the
// object around them for a wrapped list.
func listJSON(it Items, c *jsoncodec.Codec) ([]byte, error) {
	open, close, err := it.Around(c.Marshal)
	if err != nil {
		return nil, err
	}
	arr, err := c.Marshal(it.JSON(0, it.Len()))
	if err != nil {
		return nil, err
	}
	return slices.Concat(open, arr, close), nil
}

// decodeValueJSON decodes one JSON value keeping its key order and
// numbers as written.
func decodeValueJSON(b []byte) (node, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return decodeOrdered(dec)
}

// compareJSON adds to r every place where got is not want.
func compareJSON(r *RoundTrip, path string, want, got node) {
	switch w := want.(type) {
	case *object:
		g, ok := got.(*object)
		if !ok {
			r.diff(path, "an object in, %s out", kindOf(got))
			return
		}
		for i, k := range w.keys {
			j := slices.Index(g.keys, k)
			if j < 0 {
				r.diff(path+pathKey(k), "%s in, absent out", short(w.vals[i]))
				continue
			}
			compareJSON(r, path+pathKey(k), w.vals[i], g.vals[j])
		}
		for j, k := range g.keys {
			if !slices.Contains(w.keys, k) {
				r.diff(path+pathKey(k), "absent in, %s out", short(g.vals[j]))
			}
		}
	case []node:
		g, ok := got.([]node)
		if !ok {
			r.diff(path, "an array in, %s out", kindOf(got))
			return
		}
		if len(g) != len(w) {
			r.diff(path, "%d elements in, %d out", len(w), len(g))
			return
		}
		for i := range w {
			compareJSON(r, path+"["+strconv.Itoa(i)+"]", w[i], g[i])
		}
	case json.Number:
		g, ok := got.(json.Number)
		if !ok {
			r.diff(path, "%s in, %s out", w, short(got))
			return
		}
		a, aok := new(big.Rat).SetString(string(w))
		b, bok := new(big.Rat).SetString(string(g))
		if !aok || !bok || a.Cmp(b) != 0 && !sameDouble(string(w), string(g)) {
			r.diff(path, "%s in, %s out", w, g)
		}
	default: // string, bool, nil
		if want != got {
			r.diff(path, "%s in, %s out", short(want), short(got))
		}
	}
}

// sameDouble reports whether want, a number with a fraction or an
// exponent (a double field's) whose integer part a double holds exactly,
// and got are the same double: fraction digits past a double's precision
// ("-72.357206347890767", 17 significant digits) come back as the shortest
// form of the same double ("-72.35720634789077"). An integer part beyond
// 2^53 is a loss, listed.
func sameDouble(want, got string) bool {
	if !strings.ContainsAny(want, ".eE") {
		return false // an integer: exactly, or not at all
	}
	a, errA := strconv.ParseFloat(want, 64)
	b, errB := strconv.ParseFloat(got, 64)
	return errA == nil && errB == nil && a == b && math.Abs(a) < 1<<53
}

func kindOf(v node) string {
	switch v.(type) {
	case *object:
		return "an object"
	case []node:
		return "an array"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return "null"
}

// short is v for a message: scalars as JSON, at most 40 bytes.
func short(v node) string {
	switch v := v.(type) {
	case *object:
		if len(v.keys) == 0 {
			return "{}"
		}
		return "an object"
	case []node:
		if len(v) == 0 {
			return "[]"
		}
		return "an array"
	case json.Number:
		return string(v)
	case nil:
		return "null"
	}
	b, _ := json.Marshal(v)
	if len(b) > 40 {
		return string(b[:37]) + "..."
	}
	return string(b)
}
