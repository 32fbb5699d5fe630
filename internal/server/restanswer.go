package server

// REST list answers written as they are encoded, and the REST side of the
// server-wide memory budget (membudget.go).
//
// An answer is encoded a batch of records at a time into a buffer. If the
// whole answer fits in pieceSize (the default 1000 records do: 219,527 B of
// JSON, 99,873 B of protobuf) it is sent as before, in one write with its
// Content-Length. A longer one (?records=100000 is 22 MB of JSON) is sent
// chunked, a piece each time the buffer fills, so that an answer holds at
// most about one piece however large it is, and a client that does not read
// holds that piece (and the kernel's socket buffer) until the write timeout
// closes its connection, instead of the whole answer. The bytes are the same
// either way: a JSON batch is encoded as an array whose brackets are then
// trimmed and joined with commas; a protobuf batch is the list's repeated
// field 1, one record at a time.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
)

const (
	// pieceSize is the most of an answer buffered before it is sent.
	pieceSize = 256 << 10
	// batchRecords is how many records are encoded at a time.
	batchRecords = 128
	// gzipStage is how much uncompressed JSON or protobuf is staged before
	// it goes through the compressor.
	gzipStage = 32 << 10
	// gzipStateBytes is what a pooled gzip writer holds (measured: 815 KB).
	gzipStateBytes = 800 << 10
	// bodyStep is how many body bytes are charged at a time.
	bodyStep = 64 << 10
)

// answerCharge is what a list answer holds while it is written.
func answerCharge(gz bool) int64 {
	n := int64(callOverhead + pieceSize + batchRecords*1024)
	if gz {
		n += gzipStateBytes + gzipStage + pieceSize
	}
	return n
}

// listCharge is what a list answer of about b bytes holds while an RPC
// served through net/http (connect's, or grpc-go's ServeHTTP) writes it:
// the message and the framework's copy of it in its envelope, and with
// gzip the compressor and its output.
func listCharge(b int64, gz bool) int64 {
	n := callOverhead + 2*b
	if gz {
		n += gzipStateBytes + b
	}
	return n
}

// streamCharge is what a streamed answer (NDJSON or delimited protobuf)
// holds while it is written.
func streamCharge(gz bool) int64 {
	n := int64(callOverhead + streamBufferSize)
	if gz {
		n += gzipStateBytes
	}
	return n
}

// admit charges n to the server's budget for a REST call (admitCtx);
// when it cannot within budgetWait it answers 503 (closing the connection
// if closeConn: a request body is unread) and reports false. release gives
// the charge back.
func (h *restHandler) admit(w http.ResponseWriter, r *http.Request, n int64, closeConn bool) (release func(), ok bool) {
	release, err := h.s.admitCtx(r.Context(), n)
	if err == nil {
		return release, true
	}
	if closeConn {
		closeAfter(w, r)
	}
	w.Header()["Retry-After"] = []string{"1"}
	writeError(w, http.StatusServiceUnavailable, err.Error())
	return nil, false
}

// closeAfter has net/http close the connection after this answer, over
// HTTP/1.x only (a request body left unread cannot be skipped there). Over
// HTTP/2 net/http takes an answer's Connection: close as "close this
// connection": it sends GOAWAY and every other stream on it ends, where a
// refused call should end its own stream, which net/http resets when the
// handler returns with the body unread.
func closeAfter(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 {
		w.Header()["Connection"] = hdrClose
	}
}

// admitCtx charges n to the server's budget, and first, when the request
// came over HTTP/2, the call itself as gRPC's are and n to its
// connection's (h2limits.go), waiting at most budgetWait for the
// server's; release gives them back.
func (s *Server) admitCtx(ctx context.Context, n int64) (release func(), err error) {
	endCall, err := s.admitH2Call(ctx)
	if err != nil {
		return nil, err
	}
	relConn, err := acquireConn(ctx, n)
	if err != nil {
		endCall()
		return nil, err
	}
	if err := s.mem.acquire(ctx, n, budgetWait); err != nil {
		relConn()
		endCall()
		return nil, err
	}
	return func() { s.mem.release(n); relConn(); endCall() }, nil
}

// encodeSlots bounds how many list answers are being encoded at once (a
// slot is held while encoding, given up while writing to the socket). An
// answer to a client that does not read costs encoding until the kernel's
// socket buffers are full, some 10 MB of JSON: 200 such clients at once
// made 200 goroutines encode on 2 CPUs, and a health probe waited its turn
// among them for seconds. With the slots, it competes with at most their
// number. A nil encodeSlots does not bound.
type encodeSlots chan struct{}

func newEncodeSlots() encodeSlots { return make(encodeSlots, max(2, runtime.GOMAXPROCS(0))) }

func (e encodeSlots) acquire() {
	if e != nil {
		e <- struct{}{}
	}
}

func (e encodeSlots) release() {
	if e != nil {
		<-e
	}
}

// answerOut is one list answer being written: whole when it fits in
// pieceSize, in pieces otherwise.
type answerOut struct {
	slots   encodeSlots // held while encoding
	rw      *respWriter
	ct      []string
	buf     *bytes.Buffer // what was encoded and not yet sent (or compressed)
	zw      *gzipWriter   // non-nil: buf goes through zw into zbuf
	zbuf    *bytes.Buffer
	started bool // the header is sent: the answer is chunked
	err     error
}

func newAnswerOut(rw *respWriter, ct []string, slots encodeSlots) *answerOut {
	slots.acquire()
	o := &answerOut{slots: slots, rw: rw, ct: ct, buf: getBuffer()}
	if rw.gzip {
		o.zbuf = getBuffer()
		o.zw = getGzipWriter(o.zbuf)
	}
	return o
}

// batchDone is called between batches: it sends a piece when one is full.
func (o *answerOut) batchDone() {
	if o.err != nil {
		return
	}
	if o.zw != nil {
		if o.buf.Len() >= gzipStage {
			_, _ = o.zw.Write(o.buf.Bytes()) // into a bytes.Buffer
			o.buf.Reset()
		}
		if o.zbuf.Len() >= pieceSize {
			o.send(o.zbuf)
		}
		return
	}
	if o.buf.Len() >= pieceSize {
		o.send(o.buf)
	}
}

// send writes b as a piece of a chunked answer and empties it.
func (o *answerOut) send(b *bytes.Buffer) {
	if !o.started {
		o.started = true
		h := o.rw.Header()
		h["Content-Type"] = o.ct
		o.rw.setGzipHeaders()
		o.rw.WriteHeader(http.StatusOK)
	}
	o.slots.release() // not while the client takes its time
	if _, err := o.rw.Write(b.Bytes()); err != nil {
		o.err = err
	}
	o.slots.acquire()
	b.Reset()
}

// finish sends the rest: the whole answer with its Content-Length when
// nothing was sent yet. It recycles the buffers.
func (o *answerOut) finish() {
	last := o.buf
	if o.zw != nil {
		_, _ = o.zw.Write(o.buf.Bytes())
		_ = o.zw.Close()
		putGzipWriter(o.zw)
		last = o.zbuf
	}
	o.slots.release()
	switch {
	case o.err != nil:
	case o.started:
		if _, err := o.rw.Write(last.Bytes()); err != nil {
			o.err = err
		}
	default:
		h := o.rw.Header()
		h["Content-Type"] = o.ct
		o.rw.setGzipHeaders()
		h["Content-Length"] = []string{strconv.Itoa(last.Len())}
		o.rw.WriteHeader(http.StatusOK)
		_, _ = o.rw.Write(last.Bytes())
	}
	putBuffer(o.buf)
	if o.zbuf != nil {
		putBuffer(o.zbuf)
	}
}

// writeListJSON writes the records as one JSON array, as
// json.NewEncoder(w).Encode(ls) would, newline included, with the call's
// JSON codec.
func writeListJSON(rw *respWriter, ls []data.Landing, slots encodeSlots) {
	writeArrayJSON(rw, len(ls), func(i, j int) any { return ls[i:j] }, slots, nil, nil)
}

// writeArrayJSON writes n records as one JSON array, batch(i, j) being
// records i to j as a slice the codec encodes (writeListJSON), with open
// before it and close after it (a wrapped list's object, payload.go).
func writeArrayJSON(rw *respWriter, n int, batch func(i, j int) any, slots encodeSlots, open, close []byte) {
	o := newAnswerOut(rw, hdrJSON, slots)
	defer o.finish()
	o.buf.Write(open)
	enc := rw.json().NewEncoder(o.buf)
	for i := 0; i < n && o.err == nil; i += batchRecords {
		start := o.buf.Len()
		if err := enc.Encode(batch(i, min(i+batchRecords, n))); err != nil {
			o.err = err
			return
		}
		// "[a,b]\n": drop "]\n"; after the first batch, "[" becomes ",".
		o.buf.Truncate(o.buf.Len() - 2)
		if i > 0 {
			o.buf.Bytes()[start] = ','
		}
		o.batchDone()
	}
	if n == 0 {
		o.buf.WriteString("[")
	}
	o.buf.WriteString("]")
	o.buf.Write(close)
	o.buf.WriteString("\n")
}

// writeListProto writes the records as one MeteoriteLandingList, as
// proto.Marshal would.
func writeListProto(rw *respWriter, msgs []*pb.MeteoriteLanding, slots encodeSlots) {
	writeEntriesProto(rw, len(msgs), func(buf *bytes.Buffer, i int) error {
		m := msgs[i]
		size := proto.Size(m)
		buf.Grow(size + 2*protowire.SizeVarint(uint64(size)))
		b := protowire.AppendTag(buf.AvailableBuffer(), 1, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(size))
		b, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, m)
		buf.Write(b)
		return err
	}, slots)
}

// writeEntriesProto writes n records as one list message, entry(buf, i)
// writing record i as the list's field 1 (writeListProto).
func writeEntriesProto(rw *respWriter, n int, entry func(buf *bytes.Buffer, i int) error, slots encodeSlots) {
	o := newAnswerOut(rw, hdrProtobuf, slots)
	defer o.finish()
	for i := range n {
		if err := entry(o.buf, i); err != nil {
			o.err = err
			rw.failed = true
			return
		}
		if (i+1)%batchRecords == 0 {
			o.batchDone()
		}
	}
}

// budgetBody charges a request body to the server's budget as it is read,
// bodyStep bytes (times decodeFactor) at a time; release gives it all back.
type budgetBody struct {
	r       io.Reader
	h       *restHandler
	req     *http.Request
	read    int64
	charged int64 // body bytes covered
}

func (b *budgetBody) Read(p []byte) (int, error) {
	if b.read+int64(len(p)) > b.charged {
		if err := b.h.s.mem.acquire(b.req.Context(), bodyStep*decodeFactor, budgetWait); err != nil {
			return 0, err
		}
		b.charged += bodyStep
	}
	p = p[:min(int64(len(p)), b.charged-b.read)]
	n, err := b.r.Read(p)
	b.read += int64(n)
	if err != nil && err != io.EOF {
		if _, ok := errors.AsType[*http.MaxBytesError](err); !ok {
			err = &readError{err} // echo.go
		}
	}
	return n, err
}

func (b *budgetBody) release() { b.h.s.mem.release(b.charged * decodeFactor) }

// busyRead reports whether a body read failed for want of budget.
func busyRead(err error) (*busyError, bool) { return errors.AsType[*busyError](err) }
