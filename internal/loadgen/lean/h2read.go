package lean

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// maxAnswer bounds one stream's answer, as grpccall.MaxRecvMsgSize bounds
// a message.
const maxAnswer = 128 << 20

// read is the connection's reader goroutine: every frame the peer sends,
// until the connection fails or is closed.
func (c *h2conn) read() {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.close(err)
			return
		}
		c.mu.Lock()
		c.frameLocked(f)
		owed := c.pendingW
		c.pendingW = c.pendingW[:0]
		c.mu.Unlock()
		if len(owed) > 0 && !c.writeControl(owed) {
			return
		}
	}
}

// frameLocked handles one frame, under mu; frames it owes the peer go to
// pendingW.
func (c *h2conn) frameLocked(f http2.Frame) {
	switch f := f.(type) {
	case *http2.DataFrame:
		c.dataLocked(f)
	case *http2.HeadersFrame:
		c.cur = c.streams[f.StreamID]
		c.contEnd = f.StreamEnded()
		c.headersLocked(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.ContinuationFrame:
		c.headersLocked(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.RSTStreamFrame:
		if s := c.streams[f.StreamID]; s != nil {
			c.endLocked(f.StreamID, s, fmt.Errorf("stream reset by the server: %v", f.ErrCode))
		}
	case *http2.SettingsFrame:
		if f.IsAck() {
			return
		}
		f.ForeachSetting(func(s http2.Setting) error {
			switch s.ID {
			case http2.SettingInitialWindowSize:
				d := int64(s.Val) - c.peerWin
				for _, st := range c.streams {
					st.sendWin += d
				}
				c.peerWin = int64(s.Val)
			case http2.SettingMaxFrameSize:
				c.maxFrame = int(s.Val)
			case http2.SettingMaxConcurrentStreams:
				c.maxStreams = int(s.Val)
			}
			return nil
		})
		c.cond.Broadcast()
		c.pendingW = append(c.pendingW, control{kind: 's'})
	case *http2.PingFrame:
		if !f.IsAck() {
			c.pendingW = append(c.pendingW, control{kind: 'p', ping: f.Data})
		} else if f.Data == bdpPing {
			c.bdpOut = false
		}
	case *http2.WindowUpdateFrame:
		if f.StreamID == 0 {
			c.sendWin += int64(f.Increment)
		} else if s := c.streams[f.StreamID]; s != nil {
			s.sendWin += int64(f.Increment)
		}
		c.cond.Broadcast()
	case *http2.GoAwayFrame:
		// Streams above the last one the peer will process never reach
		// it: they end now (a transport error; the next call opens a new
		// connection). The others go on to their answers.
		c.goaway = true
		for id, s := range c.streams {
			if id > f.LastStreamID {
				c.endLocked(id, s, fmt.Errorf("server going away (%v)", f.ErrCode))
			}
		}
	}
}

// dataLocked appends a DATA frame to its stream's answer and grants the
// window back once a quarter of it is consumed.
func (c *h2conn) dataLocked(f *http2.DataFrame) {
	n := int(f.Length)
	c.unacked += n
	// grpc-go's client pings to estimate the bandwidth-delay product
	// whenever data arrives and no such ping is out, granting the
	// connection's window back first: the server answers both, and so it
	// does here.
	ping := n > 0 && !c.bdpOut
	if ping || c.unacked >= recvWindow/4 {
		c.pendingW = append(c.pendingW, control{kind: 'w', n: uint32(c.unacked)})
		c.unacked = 0
	}
	if ping {
		c.bdpOut = true
		c.pendingW = append(c.pendingW, control{kind: 'b'})
	}
	s := c.streams[f.StreamID]
	if s == nil {
		return // a stream cancelled: its bytes still count against the connection
	}
	if len(s.body)+len(f.Data()) > maxAnswer {
		c.endLocked(f.StreamID, s, fmt.Errorf("answer larger than %d bytes", maxAnswer))
		return
	}
	s.body = append(s.body, f.Data()...)
	if f.StreamEnded() {
		c.endLocked(f.StreamID, s, errNoTrailers)
		return
	}
	if s.unacked += n; s.unacked >= recvWindow/4 {
		c.pendingW = append(c.pendingW, control{kind: 'w', id: f.StreamID, n: uint32(s.unacked)})
		s.unacked = 0
	}
}

// headersLocked decodes a header block fragment (every one: the decoder's
// table must follow the peer's even for streams no longer waited for); at
// the end of a block that ends its stream, the stream's call is told.
func (c *h2conn) headersLocked(id uint32, frag []byte, end bool) {
	if _, err := c.dec.Write(frag); err != nil {
		c.failLocked(fmt.Errorf("hpack: %w", err))
		return
	}
	if !end {
		return
	}
	if err := c.dec.Close(); err != nil {
		c.failLocked(fmt.Errorf("hpack: %w", err))
		return
	}
	if s := c.cur; s != nil && c.contEnd {
		c.endLocked(id, s, nil)
	}
	c.cur = nil
}

// emit notes the header fields a call's checks need.
func (c *h2conn) emit(f hpack.HeaderField) {
	s := c.cur
	if s == nil {
		return
	}
	switch f.Name {
	case ":status":
		s.httpStatus = atoiString(f.Value)
	case "content-type":
		s.typeOK = len(f.Value) >= 16 && f.Value[:16] == "application/grpc"
	case "grpc-status":
		s.grpcStatus = atoiString(f.Value)
	case "grpc-message":
		s.grpcMsg = f.Value
	}
}

// writeControl writes the frames the reader owes the peer, in one write;
// false when the connection failed.
func (c *h2conn) writeControl(owed []control) bool {
	w := c.cbuf[:0]
	for _, o := range owed {
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
			w = appendFrame(w, http2.FrameSettings, http2.FlagSettingsAck, 0, nil)
		}
	}
	c.cbuf = w
	c.wmu.Lock()
	_, err := c.nc.Write(w)
	c.wmu.Unlock()
	if err != nil {
		c.close(err)
		return false
	}
	return true
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
