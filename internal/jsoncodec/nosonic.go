//go:build 386 || arm || mips || mipsle

package jsoncodec

// sonicCodec is nil: sonic does not build for 32-bit architectures, and
// Get("sonic") says so.
var sonicCodec *Codec
