package payload

// The payload on gRPC: messages grpc-go hands to a codec, the codec that
// encodes them with the compiled codec (and everything else as grpc-go's
// proto codec does), and the service's description.

import (
	"sync"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
)

// Message is a payload message a Codec encodes and decodes.
type Message interface {
	AppendProto(b []byte) ([]byte, error)
	UnmarshalProto(b []byte) error
}

// List is the list message: the answer of the large call, the upload of
// the post.
type List struct {
	P     *Payload
	Items Items
}

// AppendProto implements Message.
func (l *List) AppendProto(b []byte) ([]byte, error) { return l.Items.AppendList(b) }

// UnmarshalProto implements Message.
func (l *List) UnmarshalProto(b []byte) error {
	it, err := l.P.DecodeList(b)
	l.Items = it
	return err
}

// One is one item: a message of the stream.
type One struct {
	P     *Payload
	Items Items // the answer being streamed (sending)
	I     int   // the item of Items sent
	Value any   // the *T received
}

// AppendProto implements Message.
func (o *One) AppendProto(b []byte) ([]byte, error) { return o.Items.AppendItem(b, o.I) }

// UnmarshalProto implements Message.
func (o *One) UnmarshalProto(b []byte) error {
	v, err := o.P.DecodeItem(b)
	o.Value = v
	return err
}

// Codec is grpc-go's proto codec for every message but a payload Message,
// which it encodes with the compiled codec into pooled buffers, as the
// proto codec does.
type Codec struct{ encoding.CodecV2 }

// NewCodec wraps base (grpc-go's "proto" codec, or one wrapping it).
func NewCodec(base encoding.CodecV2) Codec { return Codec{base} }

// bufPool keeps the buffers of encoded messages; grpc-go gives them back
// once written.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

type pool struct{}

func (pool) Get(n int) *[]byte {
	b := bufPool.Get().(*[]byte)
	if cap(*b) < n {
		*b = make([]byte, n)
	}
	*b = (*b)[:n]
	return b
}

func (pool) Put(b *[]byte) {
	if cap(*b) <= 16<<20 {
		bufPool.Put(b)
	}
}

// Marshal implements encoding.CodecV2.
func (c Codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(Message)
	if !ok {
		return c.CodecV2.Marshal(v)
	}
	bp := pool{}.Get(0)
	b, err := m.AppendProto(*bp)
	if err != nil {
		pool{}.Put(bp)
		return nil, err
	}
	*bp = b
	if mem.IsBelowBufferPoolingThreshold(len(b)) {
		out := mem.BufferSlice{mem.SliceBuffer(append([]byte(nil), b...))}
		pool{}.Put(bp)
		return out, nil
	}
	return mem.BufferSlice{mem.NewBuffer(bp, pool{})}, nil
}

// Unmarshal implements encoding.CodecV2.
func (c Codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(Message)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return m.UnmarshalProto(buf.ReadOnlyData())
}
