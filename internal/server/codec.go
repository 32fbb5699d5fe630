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
	"math/bits"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/payload"
)

type checkedCodec struct {
	encoding.CodecV2
	pending atomic.Int64 // entries in bad
	bad     sync.Map     // message pointer -> its decoding error
	// slots are the encoding slots every large answer of either protocol
	// holds while it is encoded (restanswer.go).
	slots encodeSlots
}

func newCheckedCodec(slots encodeSlots) *checkedCodec {
	// The payload's messages have their own compiled codec; the
	// contract's go to grpc-go's proto codec.
	return &checkedCodec{CodecV2: payload.NewCodec(encoding.GetCodecV2("proto")), slots: slots}
}

// Marshal encodes an answer. A list (the contract's or the payload's) holds
// an encoding slot while it is encoded, as REST's do: without one, the
// gRPC list answers the budget admits were marshalled all at once, each
// 100,000-record list some 30 ms of CPU, and health checks waited their
// turn among them. The contract's list goes into a buffer of its own size
// class (marshalList).
func (c *checkedCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *pb.MeteoriteLandingList:
		c.slots.acquire()
		defer c.slots.release()
		return marshalList(m)
	case *payload.List:
		c.slots.acquire()
		defer c.slots.release()
	}
	return c.CodecV2.Marshal(v)
}

// marshalList encodes a list answer as grpc-go's proto codec does, but
// into a buffer at most an eighth larger than the message (answerPool)
// instead of grpc-go's default tiers, where anything from 32 KiB to 1 MiB
// takes a 1 MiB buffer: the default 1000-record answer (99,828 B) held
// 1 MiB while queued for a client, ten times what the send budget counts
// for it (its wire length, limits.go), and a larger answer could take any
// larger buffer its pool had kept. (grpc-go's default pool also clears
// each buffer it hands out, all 1 MiB: the server's CPU per list call
// measured 12% lower without it.) MarshalAppend writes every byte of ours.
func marshalList(m *pb.MeteoriteLandingList) (mem.BufferSlice, error) {
	size := proto.Size(m)
	// UseCachedSize: the size was just computed, and answers are not
	// changed while they are sent.
	opts := proto.MarshalOptions{UseCachedSize: true}
	if size < answerPoolMin {
		b, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	buf := answerPool.Get(size)
	if _, err := opts.MarshalAppend((*buf)[:0], m); err != nil {
		answerPool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, answerPool)}, nil
}

// answerPoolMin is the smallest answer encoded into answerPool.
const answerPoolMin = 32 << 10

// answerPool is a mem.BufferPool whose buffers are their size rounded up
// to a sixteenth of the next power of two: at most an eighth more than
// asked for. grpc-go gives a buffer back (Put) once its message is written
// to the socket or dropped.
var answerPool = &classPool{}

type classPool struct{ pools sync.Map } // class size -> *sync.Pool of *[]byte

// sizeClass rounds n up to a multiple of a sixteenth of the next power of
// two (for n of 16 or more).
func sizeClass(n int) int {
	step := 1 << max(0, bits.Len(uint(n-1))-4)
	return (n + step - 1) / step * step
}

func (p *classPool) pool(class int) *sync.Pool {
	if sp, ok := p.pools.Load(class); ok {
		return sp.(*sync.Pool)
	}
	sp, _ := p.pools.LoadOrStore(class, &sync.Pool{})
	return sp.(*sync.Pool)
}

// Get returns a buffer of length n and capacity sizeClass(n).
func (p *classPool) Get(n int) *[]byte {
	class := sizeClass(n)
	if b, ok := p.pool(class).Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, class)
	return &b
}

// Put keeps a buffer for the next answer of its class.
func (p *classPool) Put(b *[]byte) {
	if c := cap(*b); c == sizeClass(c) {
		p.pool(c).Put(b)
	}
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
