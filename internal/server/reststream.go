package server

// The REST stream routes: NDJSON or varint-delimited protobuf, one record
// at a time, buffered between writes.

import (
	"bufio"
	"net/http"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
)

// streamBufferSize is how much of a stream is buffered between writes to
// the connection: grpc-go's default write buffer (32 KiB), so both protocols
// hand the kernel about the same amount at a time.
const streamBufferSize = 32 << 10

// streamWriters recycles the streams' buffers.
var streamWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, streamBufferSize) }}

// streamOut buffers a stream the way a well-written service does: the first
// record is flushed at once, so the client's time to first record is the
// server's real latency, and the rest fill streamBufferSize before each
// write, instead of one write (and one HTTP chunk, one syscall) per record.
// The data are in memory, so nothing waits for a record that has not yet
// been produced; a source that can stall would also need a flush on idle.
//
// A stream holds an encoding slot (restanswer.go) while it encodes, and
// gives it up while its buffer goes to the connection, as a list answer
// does: a client that does not read costs encoding until the kernel's
// socket buffers are full (megabytes), and 200 of them at once would
// otherwise all encode at once.
type streamOut struct {
	rw    *respWriter
	bw    *bufio.Writer
	zw    *gzipWriter // records go through it into bw when the answer is gzip
	slots encodeSlots // one held except while writing to rw
	first bool        // the first record is written and flushed
}

func newStreamOut(rw *respWriter, slots encodeSlots) *streamOut {
	slots.acquire()
	bw := streamWriters.Get().(*bufio.Writer)
	bw.Reset(unslotted{rw, slots})
	o := &streamOut{rw: rw, bw: bw, slots: slots}
	if rw.gzip {
		o.zw = getGzipWriter(bw)
	}
	return o
}

// Write takes one whole record; after the first, it is only buffered.
func (o *streamOut) Write(b []byte) (int, error) {
	var n int
	var err error
	if o.zw != nil {
		n, err = o.zw.Write(b)
	} else {
		n, err = o.bw.Write(b)
	}
	if err != nil || o.first {
		return n, err
	}
	o.first = true
	return n, o.flush()
}

// flush sends everything buffered, through net/http to the connection.
func (o *streamOut) flush() error {
	if o.zw != nil {
		if err := o.zw.Flush(); err != nil {
			return err
		}
	}
	if err := o.bw.Flush(); err != nil {
		return err
	}
	o.slots.release()
	defer o.slots.acquire()
	return o.rw.flush()
}

// unslotted writes to rw without holding the stream's encoding slot.
type unslotted struct {
	rw    *respWriter
	slots encodeSlots
}

func (u unslotted) Write(p []byte) (int, error) {
	u.slots.release()
	defer u.slots.acquire()
	return u.rw.Write(p)
}

// close flushes what is left and recycles the buffer.
func (o *streamOut) close() {
	if o.zw != nil {
		_ = o.zw.Close() // the gzip trailer, into bw
		putGzipWriter(o.zw)
		o.zw = nil
	}
	_ = o.flush()
	o.slots.release()
	o.bw.Reset(nil)
	streamWriters.Put(o.bw)
}

// streamJSON writes the records as NDJSON, one record a line, with the
// call's JSON codec.
func (h *restHandler) streamJSON(rw *respWriter, ls []data.Landing) {
	streamLines(rw, len(ls), func(i int) any { return &ls[i] }, h.s.encoders)
}

// streamLines writes n records as NDJSON, record(i) being record i as a
// value the codec encodes (streamJSON).
func streamLines(rw *respWriter, n int, record func(i int) any, slots encodeSlots) {
	rw.Header()["Content-Type"] = hdrNDJSON
	rw.setGzipHeaders()
	rw.WriteHeader(http.StatusOK)
	out := newStreamOut(rw, slots)
	defer out.close()
	enc := rw.json().NewEncoder(out) // one Write per record, with its newline
	for i := range n {
		if err := enc.Encode(record(i)); err != nil {
			return
		}
	}
}

// streamProto writes the records as varint-length-delimited messages (the
// protodelim format), buffered as streamJSON is.
func (h *restHandler) streamProto(rw *respWriter, msgs []*pb.MeteoriteLanding) {
	streamDelimited(rw, len(msgs), h.s.encoders, func(b []byte, i int) ([]byte, error) {
		m := msgs[i]
		b = protowire.AppendVarint(b, uint64(proto.Size(m)))
		return proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, m)
	})
}

// streamDelimited writes n records as varint-length-delimited messages,
// appendRecord appending record i with its length (streamProto).
func streamDelimited(rw *respWriter, n int, slots encodeSlots, appendRecord func(b []byte, i int) ([]byte, error)) {
	rw.Header()["Content-Type"] = hdrProtobuf
	rw.setGzipHeaders()
	rw.WriteHeader(http.StatusOK)
	out := newStreamOut(rw, slots)
	defer out.close()
	scratch := make([]byte, 0, 512)
	for i := range n {
		b, err := appendRecord(scratch[:0], i)
		if err != nil {
			rw.failed = true
			return
		}
		scratch = b
		if _, err := out.Write(b); err != nil {
			return
		}
	}
}
