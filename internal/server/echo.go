package server

// What error answers may say about the request.
//
// An error message names what was wrong, often by quoting it: a value that
// is not a number, a path that does not exist. boundEcho cuts every quoted
// run (a word of the message) longer than maxEchoWord bytes, so a 1 MiB
// number literal in a body no longer comes back in a 1 MiB error; and a
// failure to read the request body is described without the connection's
// addresses (readError).

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"unicode/utf8"
)

const (
	// maxEchoWord is the most of one word of a message an error repeats.
	maxEchoWord = 100
	// maxEchoMessage bounds a whole error message.
	maxEchoMessage = 1 << 10
)

// boundEcho shortens every word of msg longer than maxEchoWord bytes to
// its start and a note of its length, and msg itself to maxEchoMessage.
func boundEcho(msg string) string {
	if len(msg) <= maxEchoWord {
		return msg
	}
	var b strings.Builder
	for i, w := range strings.Split(msg, " ") {
		if i > 0 {
			b.WriteByte(' ')
		}
		if len(w) > maxEchoWord {
			fmt.Fprintf(&b, "%s... (%d bytes)", cutUTF8(w, maxEchoWord), len(w))
		} else {
			b.WriteString(w)
		}
		if b.Len() > maxEchoMessage {
			return cutUTF8(b.String(), maxEchoMessage) + "..."
		}
	}
	return b.String()
}

// cutUTF8 cuts s to at most n bytes, not inside a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// readError is a failure to read a request body (a timeout, a reset), as
// opposed to a body that was read and is malformed.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// readFailure describes a readError for the client without the addresses
// net errors carry, and says whether it was the read timeout.
func readFailure(err error) (msg string, timeout bool) {
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return "the request body did not arrive within the server's read timeout", true
	}
	return "reading the request body failed", false
}
