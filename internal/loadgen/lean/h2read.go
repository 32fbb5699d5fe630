package lean

import (
	"encoding/binary"
	"errors"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// maxAnswer bounds one stream's answer, as grpccall.MaxRecvMsgSize bounds
// a message.
const maxAnswer = 128 << 20

// read is the connection's reader goroutine: every frame the peer sends,
// until the connection fails or is closed. A frame that breaks HTTP/2 ends
// the connection with an error of class protocol naming it.
func (c *h2conn) read() {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.fatal(c.readErr(err))
			return
		}
		c.mu.Lock()
		err = c.frameLocked(f)
		owed := len(c.ctl) > 0
		c.mu.Unlock()
		if err != nil {
			c.fatal(err)
			return
		}
		// The writer is woken once the frames already here are handled:
		// the trailers that follow a small answer's DATA end its call
		// first, and the caller's next request carries the window update
		// and BDP ping the DATA owes in its own write (writeLoop).
		if owed && !c.frameBuffered() {
			c.signal()
		}
	}
}

// frameBuffered reports whether a whole frame is read already, waiting in
// the reader's buffer.
func (c *h2conn) frameBuffered() bool {
	r := c.tap.r
	n := r.Buffered()
	if n < 9 {
		return false
	}
	h, _ := r.Peek(9)
	return n >= 9+(int(h[0])<<16|int(h[1])<<8|int(h[2]))
}

// readErr names a frame the Framer refused.
func (c *h2conn) readErr(err error) error {
	var ce http2.ConnectionError
	var se http2.StreamError
	switch {
	case errors.Is(err, http2.ErrFrameTooLarge):
		return protoErr(http2.ErrCodeFrameSize, "%s: larger than %d bytes, the SETTINGS_MAX_FRAME_SIZE the client advertises", c.tap.frame(), maxReadFrame)
	case errors.As(err, &ce):
		if d := c.fr.ErrorDetail(); d != nil {
			return protoErr(http2.ErrCode(ce), "%s: %v (%v)", c.tap.frame(), http2.ErrCode(ce), d)
		}
		return protoErr(http2.ErrCode(ce), "%s: %v", c.tap.frame(), http2.ErrCode(ce))
	case errors.As(err, &se):
		return protoErr(se.Code, "%s: %v", c.tap.frame(), se)
	}
	return err // the connection's own: transport
}

// ours reports whether id is a stream the client opened (odd, and below
// the next one it will open).
func (c *h2conn) ours(id uint32) bool { return id%2 == 1 && id < c.nextID }

// frameLocked handles one frame, under mu; frames it owes the peer are
// queued. An error ends the connection.
func (c *h2conn) frameLocked(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.DataFrame:
		return c.dataLocked(f)
	case *http2.HeadersFrame:
		if !c.ours(f.StreamID) {
			return protoErr(http2.ErrCodeProtocol, "HEADERS on stream %d, which the client never opened", f.StreamID)
		}
		c.cur = c.streams[f.StreamID]
		if c.cur != nil {
			c.cur.headed = true
		}
		c.contEnd = f.StreamEnded()
		c.hblock, c.hlist = 0, 0
		return c.headersLocked(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded(), "HEADERS")
	case *http2.ContinuationFrame:
		return c.headersLocked(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded(), "CONTINUATION")
	case *http2.RSTStreamFrame:
		if !c.ours(f.StreamID) {
			return protoErr(http2.ErrCodeProtocol, "RST_STREAM on stream %d, which the client never opened", f.StreamID)
		}
		if s := c.streams[f.StreamID]; s != nil {
			err := protoErr(f.ErrCode, "RST_STREAM %v from the server on stream %d", f.ErrCode, f.StreamID)
			if f.ErrCode == http2.ErrCodeRefusedStream {
				err = refused(err)
			}
			c.endLocked(f.StreamID, s, err)
		}
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		if err := f.ForeachSetting(c.settingLocked); err != nil {
			return err
		}
		c.cond.Broadcast()
		c.queueLocked(control{kind: 's'})
	case *http2.PingFrame:
		if !f.IsAck() {
			c.queueLocked(control{kind: 'p', ping: f.Data})
		} else if f.Data == bdpPing {
			c.bdpOut = false
		}
	case *http2.WindowUpdateFrame:
		inc := int64(f.Increment)
		if f.StreamID == 0 {
			if c.sendWin+inc > maxWindow {
				return protoErr(http2.ErrCodeFlowControl, "WINDOW_UPDATE of %d on the connection: its send window over 2^31-1", f.Increment)
			}
			c.sendWin += inc
		} else if s := c.streams[f.StreamID]; s != nil {
			if s.sendWin+inc > maxWindow {
				c.endLocked(f.StreamID, s, protoErr(http2.ErrCodeFlowControl, "WINDOW_UPDATE of %d on stream %d: its send window over 2^31-1", f.Increment, f.StreamID))
				c.queueLocked(control{kind: 'r', id: f.StreamID, n: uint32(http2.ErrCodeFlowControl)})
			} else {
				s.sendWin += inc
			}
		}
		c.cond.Broadcast()
	case *http2.GoAwayFrame:
		// Streams above the last one the peer will process never reach
		// it: they end now, and their calls are made again on a new
		// connection (errRefused). The others go on to their answers.
		c.goaway = true
		c.goawayCode = f.ErrCode
		for id, s := range c.streams {
			if id > f.LastStreamID {
				c.endLocked(id, s, refused(protoErr(f.ErrCode, "GOAWAY %v from the server (last stream %d): stream %d not processed", f.ErrCode, f.LastStreamID, id)))
			}
		}
		c.cond.Broadcast()
	case *http2.PushPromiseFrame:
		return protoErr(http2.ErrCodeProtocol, "PUSH_PROMISE on stream %d: a gRPC server never pushes", f.StreamID)
	}
	return nil
}

// settingLocked applies one of the peer's settings, checked as RFC 9113
// 6.5.2 bounds it (http2.Setting.Valid).
func (c *h2conn) settingLocked(s http2.Setting) error {
	if err := s.Valid(); err != nil {
		var code http2.ErrCode = http2.ErrCodeProtocol
		var ce http2.ConnectionError
		if errors.As(err, &ce) {
			code = http2.ErrCode(ce)
		}
		return protoErr(code, "SETTINGS %v=%d from the server: out of bounds (%v)", s.ID, s.Val, code)
	}
	switch s.ID {
	case http2.SettingInitialWindowSize:
		if err := c.windowOverflowLocked(int64(s.Val)); err != nil {
			return err
		}
		c.nextWin = int64(s.Val) // applied with the ACK (ackSettingsLocked)
	case http2.SettingMaxFrameSize:
		c.nextFrame = int(s.Val) // applied with the ACK
	case http2.SettingHeaderTableSize:
		c.table, c.tableNew = s.Val, true
	case http2.SettingEnablePush:
		if s.Val != 0 {
			return protoErr(http2.ErrCodeProtocol, "SETTINGS ENABLE_PUSH=%d from the server: a server must not send 1 (RFC 9113 6.5.2)", s.Val)
		}
	case http2.SettingMaxConcurrentStreams:
		c.maxStreams = int(s.Val)
	}
	return nil
}

// dataLocked appends a DATA frame to its stream's answer, holds the peer
// to the windows the client granted, and grants the window back once a
// quarter of it is consumed.
func (c *h2conn) dataLocked(f *http2.DataFrame) error {
	if !c.ours(f.StreamID) {
		return protoErr(http2.ErrCodeProtocol, "DATA on stream %d, which the client never opened", f.StreamID)
	}
	n := int(f.Length)
	if c.recvAvail -= int64(n); c.recvAvail < 0 {
		return protoErr(http2.ErrCodeFlowControl, "DATA of %d bytes on stream %d: %d bytes past the connection's receive window", n, f.StreamID, -c.recvAvail)
	}
	c.unacked += n
	// grpc-go's client pings to estimate the bandwidth-delay product
	// whenever data arrives and no such ping is out, granting the
	// connection's window back first: the server answers both, and so it
	// does here.
	ping := n > 0 && !c.bdpOut
	if ping || c.unacked >= recvWindow/4 {
		c.queueLocked(control{kind: 'w', n: uint32(c.unacked)})
		c.recvAvail += int64(c.unacked)
		c.unacked = 0
	}
	if ping {
		c.bdpOut = true
		c.queueLocked(control{kind: 'b'})
	}
	s := c.streams[f.StreamID]
	if s == nil {
		return nil // a stream cancelled: its bytes still count against the connection
	}
	if s.recvAvail -= int64(n); s.recvAvail < 0 {
		return protoErr(http2.ErrCodeFlowControl, "DATA of %d bytes on stream %d: %d bytes past the stream's receive window", n, f.StreamID, -s.recvAvail)
	}
	if !s.headed || len(s.body)+len(f.Data()) > maxAnswer {
		code, err := http2.ErrCodeProtocol, protoErr(http2.ErrCodeProtocol, "DATA on stream %d before its HEADERS", f.StreamID)
		if s.headed {
			code, err = http2.ErrCodeCancel, protoErr(http2.ErrCodeCancel, "DATA on stream %d: an answer over %d bytes", f.StreamID, maxAnswer)
		}
		c.endLocked(f.StreamID, s, err)
		c.queueLocked(control{kind: 'r', id: f.StreamID, n: uint32(code)})
		return nil
	}
	s.body = append(s.body, f.Data()...)
	if f.StreamEnded() {
		c.endLocked(f.StreamID, s, errNoTrailers)
		return nil
	}
	if s.pull {
		// Its caller takes the messages as they come (next), and grants
		// the stream's window back as it takes them.
		s.wake()
		return nil
	}
	// The stream's window is granted back as its answer is consumed, as
	// grpc-go grants it as its caller reads, but not past a unary
	// answer's one message: a server that sends on is held to the window
	// it has.
	if s.unacked += n; s.unacked >= recvWindow/4 && !(s.unary && whole(s.body)) {
		c.queueLocked(control{kind: 'w', id: f.StreamID, n: uint32(s.unacked)})
		s.recvAvail += int64(s.unacked)
		s.unacked = 0
	}
	return nil
}

// whole reports whether b holds a whole length-prefixed message.
func whole(b []byte) bool {
	return len(b) >= 5 && len(b)-5 >= int(binary.BigEndian.Uint32(b[1:5]))
}

// headersLocked decodes a header block fragment (every one: the decoder's
// table must follow the peer's even for streams no longer waited for),
// holding the block to maxHeaderList; at the end of a block that ends its
// stream, the stream's call is told.
func (c *h2conn) headersLocked(id uint32, frag []byte, end bool, frame string) error {
	if c.hblock += 9 + len(frag); c.hblock > maxHeaderList {
		return protoErr(http2.ErrCodeProtocol, "%s on stream %d: header block over %d bytes", frame, id, maxHeaderList)
	}
	if _, err := c.dec.Write(frag); err != nil {
		return protoErr(http2.ErrCodeCompression, "%s on stream %d: hpack: %v", frame, id, err)
	}
	if c.hlist > maxHeaderList {
		return protoErr(http2.ErrCodeProtocol, "%s on stream %d: header list over %d bytes", frame, id, maxHeaderList)
	}
	if !end {
		return nil
	}
	if err := c.dec.Close(); err != nil {
		return protoErr(http2.ErrCodeCompression, "%s on stream %d: hpack: %v", frame, id, err)
	}
	if s := c.cur; s != nil && c.contEnd {
		c.endLocked(id, s, nil)
	}
	c.cur = nil
	return nil
}

// emit notes the header fields a call's checks need, and the list's size.
func (c *h2conn) emit(f hpack.HeaderField) {
	c.hlist += len(f.Name) + len(f.Value) + 32
	s := c.cur
	if s == nil {
		return
	}
	switch f.Name {
	case ":status":
		s.httpStatus = atoiString(f.Value)
	case "content-type":
		if s.accept == "" {
			s.typeOK = len(f.Value) >= 16 && f.Value[:16] == "application/grpc"
		} else {
			s.typeOK = isMediaType(f.Value, s.accept)
		}
	case "content-encoding":
		s.coded = f.Value != "identity"
	case "grpc-status":
		s.grpcStatus = atoiString(f.Value)
	case "grpc-message":
		s.grpcMsg = f.Value
	}
}

// appendOwedLocked appends the control frames owed to w, all of them or
// all but the resets (all false), and owes no more of them (under mu, and
// xmu: w is written next); nothing once the connection ended.
func (c *h2conn) appendOwedLocked(w []byte, all bool) []byte {
	if c.err != nil {
		c.ctl = c.ctl[:0]
		return w
	}
	keep := c.ctl[:0] // the resets and SETTINGS ACKs left, in place
	for _, o := range c.ctl {
		switch o.kind {
		case 'w':
			var inc [4]byte
			binary.BigEndian.PutUint32(inc[:], o.n)
			w = appendFrame(w, http2.FrameWindowUpdate, 0, o.id, inc[:])
		case 'p':
			w = appendFrame(w, http2.FramePing, http2.FlagPingAck, 0, o.ping[:])
		case 'b':
			w = appendFrame(w, http2.FramePing, 0, 0, bdpPing[:])
		case 's':
			// Behind the requests queued: their header blocks may have
			// been encoded before these SETTINGS reached the encoder, and
			// the first block after the ACK must carry a new
			// HEADER_TABLE_SIZE (RFC 7541 4.2; TestPeerHeaderTableSize
			// caught an ACK written ahead of such a block in CI's race
			// step).
			if !all {
				keep = append(keep, o)
				continue
			}
			w = appendFrame(w, http2.FrameSettings, http2.FlagSettingsAck, 0, nil)
			c.ackSettingsLocked()
		case 'r':
			if !all {
				keep = append(keep, o)
				continue
			}
			var code [4]byte
			binary.BigEndian.PutUint32(code[:], o.n)
			w = appendFrame(w, http2.FrameRSTStream, 0, o.id, code[:])
		}
	}
	c.ctl = keep
	return w
}

// ackSettingsLocked applies the peer's INITIAL_WINDOW_SIZE and
// MAX_FRAME_SIZE as its SETTINGS ACK is queued to be written: every frame
// written before the ACK was built with the values before, every frame
// after it with the new ones. A peer can rely on its settings only once
// acknowledged, and grpcio (C-core) holds the client to that: a 34,343 B
// DATA frame written ahead of the ACK of its MAX_FRAME_SIZE of 4 MiB got
// RST_STREAM PROTOCOL_ERROR, "Failed parsing HTTP/2".
func (c *h2conn) ackSettingsLocked() {
	if d := c.nextWin - c.peerWin; d != 0 {
		if err := c.windowOverflowLocked(c.nextWin); err != nil { // windows grew since it was read
			c.failLocked(err)
			return
		}
		for _, st := range c.streams {
			st.sendWin += d
		}
		c.peerWin = c.nextWin
	}
	c.maxFrame = c.nextFrame
	c.cond.Broadcast()
}

// windowOverflowLocked is the error of an INITIAL_WINDOW_SIZE of win that
// would take a stream's send window over 2^31-1; nil when none would.
func (c *h2conn) windowOverflowLocked(win int64) error {
	d := win - c.peerWin
	for id, st := range c.streams {
		if st.sendWin+d > maxWindow {
			return protoErr(http2.ErrCodeFlowControl, "SETTINGS INITIAL_WINDOW_SIZE=%d from the server: stream %d's send window over 2^31-1", win, id)
		}
	}
	return nil
}

// bdpPing is the payload of grpc-go's BDP-estimation pings.
var bdpPing = [8]byte{2, 4, 16, 16, 9, 14, 7, 7}

// atoiString parses a small non-negative decimal; -2 when it is not one.
func atoiString(s string) int {
	if len(s) == 0 || len(s) > 9 {
		return -2
	}
	n := 0
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return -2
		}
		n = n*10 + int(s[i]-'0')
	}
	return n
}
