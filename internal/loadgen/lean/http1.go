package lean

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"

	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/restcall"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
)

// h1conn is one kept-alive HTTP/1.1 connection and its read buffer: a
// request is one Write of pre-built bytes, and the answer is parsed in
// place (status line, the headers that matter, a Content-Length or
// chunked body read exactly), with no allocation once the buffers have
// grown to the answer's size.
type h1conn struct {
	c    net.Conn
	buf  []byte // read buffer; buf[r:w] is read but not consumed
	r, w int

	// raw is the TCP socket under c when c is a plain counted TCP
	// connection (wc; not TLS, not a relay's): a round trip is one
	// raw.Read (rawExchange) that writes the request and, once the socket
	// is readable, reads the answer's first bytes, both by system calls of
	// its own on the non-blocking socket, the bytes counted on wc. The
	// first read thus waits for the answer instead of finding the socket
	// empty (Go's netpoller otherwise reads once, gets EAGAIN, parks and
	// reads again: two reads a call where wrk makes one), and neither call
	// pays what net.Conn's do around them (the descriptor's locks, the
	// runtime's entry to and exit from a blocking system call, and a
	// processor handed to another thread when the call outlasts sysmon's
	// tick, which the write of a request over loopback often did: it runs
	// the server's receive path): a non-blocking socket never blocks.
	raw   syscall.RawConn
	wc    *wire.Conn
	wait  func(uintptr) bool // rawExchange, bound once
	req   []byte             // the request rawExchange writes
	sent  bool
	ioErr error // rawExchange's
}

// bufSize is the read buffer's size, grpc-go's and the standard engine's
// socket buffer size.
const bufSize = 32 << 10

// maxLine bounds a status line, a header line or a chunk-size line, and
// maxHead a status line and headers together (net/http's client default,
// the standard engine's). An answer past either, or whose framing is
// otherwise broken (its status line, a header line, Content-Length,
// Transfer-Encoding, a chunk's size or end, a body over restcall.MaxBody),
// is an error of class protocol naming what was wrong; a body never
// finished is a timeout (the watchdog).
const (
	maxLine = 16 << 10
	maxHead = 10 << 20
)

var errLineTooLong = framing("a line over %d bytes", maxLine)

// framing is an error of class protocol: the answer's HTTP/1.1 framing is
// broken.
func framing(format string, args ...any) error {
	return &call.Error{Class: results.ClassProtocol, Err: fmt.Errorf("HTTP/1.1: "+format, args...)}
}

func newH1Conn(c net.Conn) *h1conn {
	h := &h1conn{c: c, buf: make([]byte, bufSize)}
	if wc, ok := c.(*wire.Conn); ok {
		if tc, ok := wc.Conn.(*net.TCPConn); ok {
			if raw, err := tc.SyscallConn(); err == nil {
				h.raw, h.wc = raw, wc
				h.wait = h.rawExchange
			}
		}
	}
	return h
}

// rawExchange is raw.Read's function. The first time it writes the
// request and asks to wait until the socket is readable (RawConn.Read
// resets the socket's readiness before it calls it the first time, so an
// answer that arrives after the write is never missed); then it reads
// what has come into the buffer, and waits again if nothing has (a
// spurious wake-up). A deadline (abort) ends the wait. A write the socket
// takes only in part (its send buffer full) is finished through c.
func (h *h1conn) rawExchange(fd uintptr) bool {
	if !h.sent {
		h.sent = true
		n, err := rawIO(syscall.SYS_WRITE, fd, h.req)
		h.wc.Sent(n)
		switch {
		case err == syscall.EAGAIN || err == nil && n < len(h.req):
			_, h.ioErr = h.c.Write(h.req[n:]) // counted by c
			return h.ioErr != nil
		case err != nil:
			h.ioErr = h.opError("write", err)
			return true
		}
		return false
	}
	n, err := rawIO(syscall.SYS_READ, fd, h.buf[h.w:])
	switch {
	case err == syscall.EAGAIN:
		return false
	case err != nil:
		h.ioErr = h.opError("read", err)
	case n == 0:
		h.ioErr = io.EOF
	default:
		h.w += n
		h.wc.Received(n)
	}
	return true
}

// rawIO is one read or write system call (trap) of b on the non-blocking
// socket fd, retried when a signal interrupts it: RawSyscall, as it never
// blocks. n is 0 on an error.
func rawIO(trap, fd uintptr, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, _, errno := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch errno {
		case 0:
			return int(n), nil
		case syscall.EINTR:
			continue
		}
		return 0, errno
	}
}

// opError is a failed system call's error as net.Conn's Read and Write
// report it.
func (h *h1conn) opError(op string, errno error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: h.c.LocalAddr(), Addr: h.c.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
}

// send writes req; with raw, it returns once the answer's first bytes are
// in the buffer (or the socket failed, or the call's deadline ended the
// wait).
func (h *h1conn) send(req []byte) error {
	if h.raw == nil || h.r < h.w { // bytes already read past the last answer: read them first
		_, err := h.c.Write(req)
		return err
	}
	h.r, h.w = 0, 0
	h.req, h.sent, h.ioErr = req, false, nil
	err := h.raw.Read(h.wait)
	h.req = nil
	if h.ioErr != nil {
		return h.ioErr
	}
	return err
}

// abort ends the round trip in progress now: its reads and writes fail
// with a timeout. The connection is not used again.
func (h *h1conn) abort() { h.c.SetDeadline(time.Unix(1, 0)) }

// fill reads more bytes into the buffer, moving the unconsumed ones to its
// start when it is full.
func (h *h1conn) fill() error {
	if h.r > 0 && h.w == len(h.buf) {
		h.w = copy(h.buf, h.buf[h.r:h.w])
		h.r = 0
	}
	if h.w == len(h.buf) {
		return errLineTooLong
	}
	n, err := h.c.Read(h.buf[h.w:])
	h.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// line returns the next line without its CRLF (or LF), valid until the
// next read.
func (h *h1conn) line() ([]byte, error) {
	for {
		if i := bytes.IndexByte(h.buf[h.r:h.w], '\n'); i >= 0 {
			l := h.buf[h.r : h.r+i]
			h.r += i + 1
			return bytes.TrimSuffix(l, []byte{'\r'}), nil
		}
		if h.w-h.r >= maxLine {
			return nil, errLineTooLong
		}
		if err := h.fill(); err != nil {
			return nil, err
		}
	}
}

// readN appends exactly n bytes of the answer to dst.
func (h *h1conn) readN(dst []byte, n int) ([]byte, error) {
	if have := min(h.w-h.r, n); have > 0 {
		dst = append(dst, h.buf[h.r:h.r+have]...)
		h.r += have
		n -= have
	}
	if n == 0 {
		return dst, nil
	}
	l := len(dst)
	dst = grow(dst, n)
	_, err := io.ReadFull(h.c, dst[l:l+n])
	return dst, err
}

// grow extends b by n bytes, reallocating only when its capacity is short.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), 2*cap(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// head is what the lean engine reads of an answer's headers.
type head struct {
	status  int
	length  int // Content-Length; -1 when absent
	chunked bool
	close   bool // Connection: close, or HTTP/1.0
	typeOK  bool // Content-Type is the media type wanted
	coded   bool // a Content-Encoding other than identity
	// grpcStatus and grpcMsg are a gRPC-Web trailers-only answer's
	// (grpc-status in the headers); grpcStatus -1: none.
	grpcStatus int
	grpcMsg    string
}

// readHead parses a status line and headers; accept is the media type a
// 200 answer must carry.
func (h *h1conn) readHead(accept string) (head, error) {
	hd := head{length: -1, grpcStatus: -1}
	l, err := h.line()
	if err != nil {
		return hd, err
	}
	// "HTTP/1.1 200 OK"
	if len(l) < 12 || !bytes.HasPrefix(l, []byte("HTTP/1.")) || l[8] != ' ' {
		return hd, framing("bad status line %q", clip(l))
	}
	hd.close = l[7] == '0'
	hd.status, err = atoi(l[9:12])
	if err != nil {
		return hd, framing("bad status line %q", clip(l))
	}
	size := len(l)
	for {
		l, err := h.line()
		if err != nil {
			return hd, err
		}
		if len(l) == 0 {
			return hd, nil
		}
		if size += len(l) + 2; size > maxHead {
			return hd, framing("a header block over %d bytes, without end", maxHead)
		}
		k, v, ok := bytes.Cut(l, []byte{':'})
		if !ok {
			return hd, framing("bad header line %q", clip(l))
		}
		v = bytes.TrimSpace(v)
		switch {
		case equalFold(k, "content-length"):
			if hd.length, err = atoi(v); err != nil {
				return hd, framing("bad Content-Length %q", clip(v))
			}
		case equalFold(k, "transfer-encoding"):
			hd.chunked = equalFold(v, "chunked")
			if !hd.chunked {
				return hd, framing("transfer encoding %q", clip(v))
			}
		case equalFold(k, "connection"):
			hd.close = hd.close || equalFold(v, "close")
		case equalFold(k, "content-type"):
			mt, _, _ := bytes.Cut(v, []byte{';'})
			hd.typeOK = equalFold(bytes.TrimSpace(mt), accept)
		case equalFold(k, "content-encoding"):
			hd.coded = !equalFold(v, "identity")
		case equalFold(k, "grpc-status"):
			if hd.grpcStatus, err = atoi(v); err != nil {
				hd.grpcStatus = -2 // not a number: a gRPC-Web answer refuses it
			}
		case equalFold(k, "grpc-message"):
			hd.grpcMsg = string(clip(v))
		}
	}
}

// readBody appends the answer's body to dst: Content-Length bytes, or
// the chunks up to the last one and its trailers.
func (h *h1conn) readBody(dst []byte, hd head) ([]byte, error) {
	if !hd.chunked {
		if hd.length < 0 {
			return dst, framing("no Content-Length and not chunked")
		}
		if hd.length > restcall.MaxBody {
			return dst, framing("Content-Length %d, more than the client takes (%d)", hd.length, restcall.MaxBody)
		}
		return h.readN(dst, hd.length)
	}
	for {
		l, err := h.line()
		if err != nil {
			return dst, err
		}
		l, _, _ = bytes.Cut(l, []byte{';'}) // chunk extensions
		n, err := hexSize(bytes.TrimSpace(l))
		if err != nil {
			return dst, framing("bad chunk size %q", clip(l))
		}
		if n == 0 {
			for size := 0; ; { // trailers, up to the empty line
				if l, err = h.line(); err != nil || len(l) == 0 {
					return dst, err
				}
				if size += len(l) + 2; size > maxHead {
					return dst, framing("trailers over %d bytes, without end", maxHead)
				}
			}
		}
		if len(dst)+n > restcall.MaxBody {
			return dst, framing("chunked body over %d bytes, more than the client takes", restcall.MaxBody)
		}
		if dst, err = h.readN(dst, n); err != nil {
			return dst, err
		}
		if l, err = h.line(); err != nil {
			return dst, err
		} else if len(l) != 0 {
			return dst, framing("chunk longer than its size")
		}
	}
}

// roundTrip writes req and reads the answer's body into body[:0]; a non-200
// answer is a call.HTTPStatus error, a wrong media type or content coding
// an invalid response. It reports whether the connection can be reused.
func (h *h1conn) roundTrip(req []byte, accept string, body []byte) ([]byte, bool, error) {
	hd, body, err := h.exchange(req, accept, body)
	if err != nil {
		return body, false, err
	}
	body, err = restReply(accept)(replyOf(hd, body))
	return body, !hd.close, err
}

// exchange writes req and reads the answer's head and its body into
// body[:0]: an error is the exchange's (transport, or the HTTP/1.1
// framing's); the answer's status and media type are the caller's to
// check.
func (h *h1conn) exchange(req []byte, accept string, body []byte) (head, []byte, error) {
	if err := h.send(req); err != nil {
		return head{}, body, err
	}
	hd, err := h.readHead(accept)
	if err != nil {
		return hd, body, err
	}
	body, err = h.readBody(body[:0], hd)
	return hd, body, err
}

// clip is b, at most 64 bytes of it, for an error message.
func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// errorDetail reads the contract's {"error": "..."} body, if any.
func errorDetail(status int, b []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		return fmt.Sprintf("status %d: %s", status, e.Error)
	}
	return ""
}

// hexSize parses a chunk size without allocating.
func hexSize(b []byte) (int, error) {
	if len(b) == 0 || len(b) > 7 { // at most 256 MiB, far above MaxBody
		return 0, errors.New("bad chunk size")
	}
	n := 0
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, errors.New("bad chunk size")
		}
		n = n<<4 | int(c)
	}
	return n, nil
}

// atoi parses a non-negative decimal number without allocating.
func atoi(b []byte) (int, error) {
	if len(b) == 0 || len(b) > 18 {
		return 0, errors.New("bad number")
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errors.New("bad number")
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

// equalFold is ASCII case-insensitive equality of b and s.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
