//go:build !(386 || arm || mips || mipsle)

package jsoncodec

import (
	"bytes"

	"github.com/bytedance/sonic"
)

// sonicAPI is sonic's fastest configuration: no HTML escaping, map keys
// unsorted, strings not checked for UTF-8 when encoding. Its output for
// the data set is valid JSON (escaping differs from encoding/json's, which
// every decoder reads the same). On amd64 and arm64 sonic compiles its
// JIT; on other 64-bit architectures it falls back to encoding/json (its
// compat.go); it does not build for 32-bit ones (nosonic.go).
var sonicAPI = sonic.ConfigDefault

var sonicCodec = &Codec{
	Name: Sonic, Library: "sonic", Module: "github.com/bytedance/sonic",
	Marshal:   sonicAPI.Marshal,
	Unmarshal: sonicAPI.Unmarshal,
	// The stream encoder encodes into a pooled buffer and writes it to
	// buf: no output-sized copy per answer, as Marshal's result would be
	// (6x std's allocation per answer, GC that is not sonic's own).
	encode: func(buf *bytes.Buffer, v any) error { return sonicAPI.NewEncoder(buf).Encode(v) },
}
