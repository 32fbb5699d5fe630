package server

// Malformed request messages on gRPC: INVALID_ARGUMENT, not INTERNAL.
//
// grpc-go turns any error of the codec's Unmarshal into codes.Internal
// ("grpc: failed to unmarshal the received message", rpc_util.go in
// v1.85), whatever the error says, so a codec cannot give the code itself.
// checkedCodec, the server's codec, wraps grpc-go's proto codec: when a
// message does not decode, it notes the message (by its pointer) with the
// error and reports success; the interceptors look the message up before
// the handler sees it (unary) or when the handler receives it (streaming)
// and answer INVALID_ARGUMENT with the decoding error. The lookup is one
// atomic load while no malformed message is pending.

import (
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/internal/payload"
)

type checkedCodec struct {
	encoding.CodecV2
	pending atomic.Int64 // entries in bad
	bad     sync.Map     // message pointer -> its decoding error
}

func newCheckedCodec() *checkedCodec {
	// The payload's messages have their own compiled codec; the
	// contract's go to grpc-go's proto codec.
	return &checkedCodec{CodecV2: payload.NewCodec(encoding.GetCodecV2("proto"))}
}

func (c *checkedCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	if m, ok := v.(proto.Message); ok {
		proto.Reset(m)
	}
	c.pending.Add(1)
	c.bad.Store(v, boundEcho("malformed protobuf request: "+err.Error()))
	return nil
}

// check returns INVALID_ARGUMENT if v did not decode, and forgets it.
func (c *checkedCodec) check(v any) error {
	if c.pending.Load() == 0 {
		return nil
	}
	msg, ok := c.bad.LoadAndDelete(v)
	if !ok {
		return nil
	}
	c.pending.Add(-1)
	return status.Error(codes.InvalidArgument, msg.(string))
}

// checkedStream checks each message a streaming handler receives.
type checkedStream struct {
	grpc.ServerStream
	codec *checkedCodec
}

func (s *checkedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.codec.check(m)
}
