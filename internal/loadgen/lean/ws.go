package lean

// A minimal WebSocket client (RFC 6455) over a lean HTTP/1.1 connection,
// for the chat and feed scenarios over REST (streams.go): the upgrade
// request, byte for byte what the standard engine's
// (github.com/coder/websocket over net/http) sends but for its random key,
// the answer's Sec-WebSocket-Accept checked; masked client frames, each
// written in one write; server frames read in place from the connection's
// buffer: text and binary messages (fragmented ones joined from their
// continuations), pings answered with pongs, a close answered with the
// same close. No extension is offered, so none may be used.
//
// A frame that breaks the protocol (reserved bits, a masked server frame,
// an unknown opcode, a fragmented or long control frame, a continuation
// out of place, a message over maxWSMessage) is an error of class
// protocol naming what was wrong; the client closes with 1002 (1009 for a
// message too big) and drops the connection. A close from the server with
// a code other than 1000 is an error of class protocol with its code and
// reason, as the standard engine's.

import (
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/results"
)

// WebSocket opcodes and close codes.
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa

	closeNormal        = 1000
	closeProtocolError = 1002
	closeNoStatus      = 1005 // a close frame without a code (never sent)
	closeTooBig        = 1009
)

// maxWSMessage bounds a message the client reads (all its fragments): the
// contract's largest chat message; a feed record is a few hundred bytes.
const maxWSMessage = api.MaxChatMessageBytes

// wsGUID is RFC 6455's key suffix for Sec-WebSocket-Accept.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// wsCloseError is the server's close of a WebSocket: its code and reason.
type wsCloseError struct {
	code   int
	reason string
}

func (e *wsCloseError) Error() string {
	return fmt.Sprintf("WebSocket closed by the server: status %d, reason %q", e.code, e.reason)
}

// closeCode is the code of the server's close err is, or -1.
func closeCode(err error) int {
	var ce *wsCloseError
	if errors.As(err, &ce) {
		return ce.code
	}
	return -1
}

// wsErr is the error of a WebSocket exchange: the server's close with a
// code other than normal is of class protocol, as the standard engine
// classifies it (other errors pass as they are).
func wsErr(err error) error {
	if code := closeCode(err); code != -1 && code != closeNormal {
		return &call.Error{Class: results.ClassProtocol, Err: err}
	}
	return err
}

// wsViolation is a frame of the server's that breaks RFC 6455: the client
// closes with code.
type wsViolation struct {
	code int
	msg  string
}

func (e *wsViolation) Error() string { return "WebSocket: " + e.msg }

func violation(code int, format string, args ...any) error {
	return &call.Error{Class: results.ClassProtocol, Err: &wsViolation{code: code, msg: fmt.Sprintf(format, args...)}}
}

// wsRequest is a WebSocket upgrade request of path, as the standard
// engine writes it, split around its Sec-WebSocket-Key's value.
type wsRequest struct {
	pre, post []byte
}

// newWSRequest builds the upgrade of path on host: net/http's request
// line, Host and User-Agent, then the fields coder/websocket sets with the
// client's (header), in net/http's order, and the Accept-Encoding net/http's
// transport adds (the standard engine's WebSocket client does not turn it
// off; a 101 has no body to compress).
func newWSRequest(host, path, sub string, header http.Header) wsRequest {
	h := header.Clone()
	h.Set("Connection", "Upgrade")
	h.Set("Upgrade", "websocket")
	h.Set("Sec-WebSocket-Version", "13")
	const mark = "KEYKEYKEYKEYKEYKEYKEYKEY" // 24 bytes, a key's length
	h.Set("Sec-WebSocket-Key", mark)
	if sub != "" {
		h.Set("Sec-WebSocket-Protocol", sub)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: Go-http-client/1.1\r\n", path, host)
	h.Write(&b)
	b.WriteString("Accept-Encoding: gzip\r\n\r\n")
	pre, post, _ := bytes.Cut(b.Bytes(), []byte(mark))
	return wsRequest{pre: pre, post: post}
}

// wsConn is one WebSocket's client side over h.
type wsConn struct {
	h    *h1conn
	wbuf []byte // the frame being written
	msg  []byte // the message being read
	ctl  []byte // a control frame's payload
	// closeSent: the client sent its close; a close from the server is
	// then the answer, not answered again.
	closeSent bool
}

// wsAccept is the Sec-WebSocket-Accept of key.
func wsAccept(key string) string {
	s := sha1.Sum([]byte(key + wsGUID))
	return base64.StdEncoding.EncodeToString(s[:])
}

// upgrade writes the upgrade request on h with a fresh key and reads the
// answer: a 101 with the handshake's fields, or the status as an error.
// sub is the subprotocol offered ("": none); buf is scratch for the
// request.
func upgrade(h *h1conn, req wsRequest, sub string, buf []byte) ([]byte, error) {
	var k [16]byte
	rand.Read(k[:])
	key := base64.StdEncoding.EncodeToString(k[:])
	buf = append(append(append(buf[:0], req.pre...), key...), req.post...)
	if err := h.send(buf); err != nil {
		return buf, err
	}
	return buf, h.readUpgrade(wsAccept(key), sub)
}

// readUpgrade reads the upgrade's answer: status 101, Connection: Upgrade,
// Upgrade: websocket, the Sec-WebSocket-Accept of the key, the
// subprotocol offered or none, no extension. Another status is a
// call.HTTPStatus error with the body's detail; a 101 without those fields
// is an error of class protocol.
func (h *h1conn) readUpgrade(accept, sub string) error {
	l, err := h.line()
	if err != nil {
		return err
	}
	if len(l) < 12 || !bytes.HasPrefix(l, []byte("HTTP/1.")) || l[8] != ' ' {
		return framing("bad status line %q", clip(l))
	}
	status, err := atoi(l[9:12])
	if err != nil {
		return framing("bad status line %q", clip(l))
	}
	hd := head{status: status, length: -1}
	var conn, upg, acc, proto, ext bool
	size := len(l)
	for {
		l, err := h.line()
		if err != nil {
			return err
		}
		if len(l) == 0 {
			break
		}
		if size += len(l) + 2; size > maxHead {
			return framing("a header block over %d bytes, without end", maxHead)
		}
		k, v, ok := bytes.Cut(l, []byte{':'})
		if !ok {
			return framing("bad header line %q", clip(l))
		}
		v = bytes.TrimSpace(v)
		switch {
		case equalFold(k, "connection"):
			conn = conn || hasToken(v, "upgrade")
		case equalFold(k, "upgrade"):
			upg = upg || hasToken(v, "websocket")
		case equalFold(k, "sec-websocket-accept"):
			acc = string(v) == accept
		case equalFold(k, "sec-websocket-protocol"):
			proto = sub != "" && equalFold(v, sub)
			if !proto {
				return wsHandshake("the server chose subprotocol %q, not offered", clip(v))
			}
		case equalFold(k, "sec-websocket-extensions"):
			ext = true
		case equalFold(k, "content-length"):
			if hd.length, err = atoi(v); err != nil {
				return framing("bad Content-Length %q", clip(v))
			}
		case equalFold(k, "transfer-encoding"):
			hd.chunked = equalFold(v, "chunked")
		}
	}
	if status != http.StatusSwitchingProtocols {
		var body []byte
		if hd.chunked || hd.length >= 0 {
			body, _ = h.readBody(nil, hd)
		}
		return call.HTTPStatus(status, errorDetail(status, body))
	}
	switch {
	case !conn:
		return wsHandshake("the 101 has no Connection: Upgrade")
	case !upg:
		return wsHandshake("the 101 has no Upgrade: websocket")
	case !acc:
		return wsHandshake("the 101's Sec-WebSocket-Accept is missing or not the key's")
	case ext:
		return wsHandshake("the server chose an extension, none offered")
	}
	return nil
}

func wsHandshake(format string, args ...any) error {
	return &call.Error{Class: results.ClassProtocol, Err: fmt.Errorf("WebSocket upgrade: "+format, args...)}
}

// hasToken reports whether a comma-separated header value holds token t
// (ASCII case-insensitive).
func hasToken(v []byte, t string) bool {
	for len(v) > 0 {
		var f []byte
		f, v, _ = bytes.Cut(v, []byte{','})
		if equalFold(bytes.TrimSpace(f), t) {
			return true
		}
	}
	return false
}

// write sends one masked frame of opcode op: header and payload in one
// write. The mask need not be secret from the client's own server (it
// defends proxies against a browser's scripts), so a fast generator
// gives it.
func (w *wsConn) write(op byte, p []byte) error {
	b := append(w.wbuf[:0], 0x80|op)
	switch n := len(p); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n <= 0xffff:
		b = append(b, 0x80|126, byte(n>>8), byte(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	var m [4]byte
	binary.LittleEndian.PutUint32(m[:], mrand.Uint32())
	b = append(b, m[:]...)
	start := len(b)
	b = append(b, p...)
	for i := range p {
		b[start+i] ^= m[i&3]
	}
	w.wbuf = b
	_, err := w.h.c.Write(b)
	return err
}

// closeWith sends a close frame of code and reason (best effort: the
// connection is dropped after it).
func (w *wsConn) closeWith(code int, reason string) error {
	p := binary.BigEndian.AppendUint16(w.ctl[:0], uint16(code))
	p = append(p, reason...)
	w.ctl, w.closeSent = p, true
	return w.write(opClose, p)
}

// need has at least n bytes (n small) read into the buffer.
func (h *h1conn) need(n int) error {
	for h.w-h.r < n {
		if err := h.fill(); err != nil {
			return err
		}
	}
	return nil
}

// read reads the next data message: its opcode (opText or opBinary) and
// payload, valid until the next read. Pings are answered on the way; a
// close frame is answered with the same close and returned as a
// *wsCloseError; a frame that breaks the protocol is answered with a close
// of the violation's code and returned (class protocol).
func (w *wsConn) read() (byte, []byte, error) {
	op, msg, err := w.readMessage()
	var v *wsViolation
	var ce *wsCloseError
	switch {
	case err == nil, errors.As(err, &ce):
	case errors.As(err, &v):
		w.closeWith(v.code, "")
	default: // the connection's
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		err = fmt.Errorf("WebSocket: reading a frame: %w", err)
	}
	return op, msg, err
}

func (w *wsConn) readMessage() (byte, []byte, error) {
	h := w.h
	w.msg = w.msg[:0]
	var msgOp byte // the message's opcode once its first frame is in
	for {
		if err := h.need(2); err != nil {
			return 0, nil, err
		}
		b0, b1 := h.buf[h.r], h.buf[h.r+1]
		fin, op, n := b0&0x80 != 0, b0&0x0f, int(b1&0x7f)
		ext := 0
		switch n {
		case 126:
			ext = 2
		case 127:
			ext = 8
		}
		if err := h.need(2 + ext); err != nil {
			return 0, nil, err
		}
		switch ext {
		case 2:
			n = int(binary.BigEndian.Uint16(h.buf[h.r+2:]))
		case 8:
			u := binary.BigEndian.Uint64(h.buf[h.r+2:])
			if u > maxWSMessage {
				return 0, nil, violation(closeTooBig, "a frame of %d bytes, over %d", u, maxWSMessage)
			}
			n = int(u)
		}
		switch {
		case b0&0x70 != 0:
			return 0, nil, violation(closeProtocolError, "reserved bits %#x set (no extension was negotiated)", b0&0x70)
		case b1&0x80 != 0:
			return 0, nil, violation(closeProtocolError, "a masked frame from the server")
		case op >= opClose && op <= opPong:
			if !fin || n > 125 {
				return 0, nil, violation(closeProtocolError, "control frame %#x fragmented or over 125 bytes (%d)", op, n)
			}
		case op == opContinuation:
			if msgOp == 0 {
				return 0, nil, violation(closeProtocolError, "a continuation frame outside a message")
			}
		case op == opText || op == opBinary:
			if msgOp != 0 {
				return 0, nil, violation(closeProtocolError, "a new message inside a fragmented one")
			}
			msgOp = op
		default:
			return 0, nil, violation(closeProtocolError, "unknown opcode %#x", op)
		}
		h.r += 2 + ext
		if op >= opClose {
			var err error
			if w.ctl, err = h.readN(w.ctl[:0], n); err != nil {
				return 0, nil, err
			}
			if err := w.control(op); err != nil {
				return 0, nil, err
			}
			continue
		}
		if len(w.msg)+n > maxWSMessage {
			return 0, nil, violation(closeTooBig, "a message over %d bytes", maxWSMessage)
		}
		var err error
		if w.msg, err = h.readN(w.msg, n); err != nil {
			return 0, nil, err
		}
		if fin {
			return msgOp, w.msg, nil
		}
	}
}

// control handles a control frame whose payload is w.ctl.
func (w *wsConn) control(op byte) error {
	switch op {
	case opPing:
		return w.write(opPong, w.ctl)
	case opPong:
		return nil
	}
	code, reason := closeNoStatus, ""
	switch len(w.ctl) {
	case 0:
	case 1:
		return violation(closeProtocolError, "a close frame of 1 byte")
	default:
		code, reason = int(binary.BigEndian.Uint16(w.ctl)), string(w.ctl[2:])
	}
	// Answer with the same close (as coder/websocket does), unless it
	// answers the client's; then the connection is done.
	if !w.closeSent {
		w.closeSent = true
		if code == closeNoStatus {
			w.write(opClose, nil)
		} else {
			w.write(opClose, w.ctl)
		}
	}
	return &wsCloseError{code: code, reason: reason}
}
