package lean

import (
	"bytes"
	"time"
)

// SampleEvery is how often an answer is fully decoded and validated even
// when its bytes equal the last validated answer's: one call in SampleEvery
// of each caller (its 1st, 101st, ...), and every call in a client's first
// SampleAll.
const (
	SampleEvery = 100
	SampleAll   = time.Second
)

// verifier checks one caller's answers. An answer is accepted without
// decoding when it is byte for byte the last one that was fully decoded
// and validated (the server's answers to one request are the same bytes,
// call after call); any other answer, and every sampled one, is decoded and
// validated by check. A caller has its own: no locks.
type verifier struct {
	check func(body []byte) error
	ref   []byte    // the last answer check accepted
	born  time.Time // the client's start: every call before born+SampleAll is sampled
	calls uint64
	// Decoded counts the answers fully decoded (tests).
	decoded uint64
}

// verify checks an answer; start is the call's start.
func (v *verifier) verify(body []byte, start time.Time) error {
	v.calls++
	sampled := v.calls%SampleEvery == 1 || start.Sub(v.born) < SampleAll
	if !sampled && v.ref != nil && bytes.Equal(body, v.ref) {
		return nil
	}
	v.decoded++
	if err := v.check(body); err != nil {
		return err
	}
	v.ref = append(v.ref[:0], body...)
	return nil
}
