package server

// The REST upload: POST of the records, JSON or protobuf, maybe gzipped.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
)

// post decodes every record of the body, then answers "SUCCESS". w is the
// unwrapped writer, which http.MaxBytesReader needs to close the connection
// after an oversized body.
func (h *restHandler) post(w http.ResponseWriter, rw *respWriter, r *http.Request, accept pref) {
	ct := mediaType(r.Header.Get("Content-Type"))
	isProto := isProtobufType(ct)
	rw.p = protoREST
	if isProto {
		rw.p = protoRESTProtobuf
	}
	h.count(rw, methodPostLargePayload)
	if !isProto && ct != "" && !strings.EqualFold(ct, api.TypeJSON) {
		writeError(rw, http.StatusUnsupportedMediaType,
			"Content-Type must be "+api.TypeJSON+" or "+api.TypeProtobuf)
		return
	}
	if r.ContentLength > h.maxBody {
		closeAfter(rw, r)
		writeError(rw, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("request body is %d bytes; the limit is %d", r.ContentLength, h.maxBody))
		return
	}
	gz, known := requestCoding(r.Header["Content-Encoding"])
	if !known {
		writeError(rw, http.StatusUnsupportedMediaType, "Content-Encoding must be gzip or identity")
		return
	}
	release, ok := h.admit(rw, r, callOverhead, true)
	if !ok {
		return
	}
	defer release()
	bb := &budgetBody{r: http.MaxBytesReader(w, r.Body, h.maxBody), h: h, req: r} // restanswer.go
	defer bb.release()
	var body io.Reader = bb
	length := r.ContentLength
	if gz {
		zb := newGzipBody(body, h.maxBody) // the limit is on the inflated size
		defer zb.close()
		body, length = zb, 0
	}
	var err error
	switch {
	case h.s.payload != nil:
		err = h.decodePayloadBody(rw.json(), body, length, isProto) // payload.go
	case isProto:
		err = h.decodeProtoBody(body, length)
	default:
		_, err = decodeLandingsWith(rw.json(), body, length)
	}
	if err != nil {
		if _, ok := errors.AsType[*readError](err); ok {
			msg, timeout := readFailure(err) // echo.go: no addresses
			closeAfter(rw, r)
			code := http.StatusBadRequest
			if timeout {
				code = http.StatusRequestTimeout
			}
			writeError(rw, code, msg)
			return
		}
		if be, ok := busyRead(err); ok {
			closeAfter(rw, r) // the rest of the body is unread
			rw.Header()["Retry-After"] = []string{"1"}
			writeError(rw, http.StatusServiceUnavailable, be.Error())
			return
		}
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			if gz { // the raw body may be unread: do not wait for the rest of it
				closeAfter(rw, r)
			}
			writeError(rw, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("request body is over the %d-byte limit", mbe.Limit))
			return
		}
		writeError(rw, http.StatusBadRequest, err.Error())
		return
	}
	if accept == prefProto || (accept == prefNone && isProto) {
		writeProto(rw, h.s.success)
	} else {
		writeJSON(rw, data.Success)
	}
}

// decodeLandingsJSON decodes a POST body: one JSON array of landings, and
// nothing after it. It returns the reader's error unchanged when reading
// fails (an *http.MaxBytesError, for instance), and a descriptive error for
// anything that is not such an array (truncated, malformed, null, an object,
// wrong types, trailing data).
func decodeLandingsJSON(r io.Reader) ([]data.Landing, error) {
	return decodeLandingsWith(jsoncodec.Default(), r, 0)
}

// decodeLandingsWith decodes a POST body as decodeLandingsJSON does, with
// codec jc.
func decodeLandingsWith(jc *jsoncodec.Codec, body io.Reader, length int64) ([]data.Landing, error) {
	var ls []data.Landing
	if err := decodeArrayJSON(jc, body, length, &ls); err != nil {
		return nil, err
	}
	return ls, nil
}

// decodeArrayJSON decodes a POST body into v, a pointer to a slice (see
// decodeLandingsJSON), with codec jc: encoding/json's streaming Decoder
// for std; the others read the whole body (as decodeProtoBody does) and
// unmarshal it, which rejects data after the array.
func decodeArrayJSON(jc *jsoncodec.Codec, body io.Reader, length int64, v any) error {
	isNull := func() bool { e := reflect.ValueOf(v).Elem(); return e.Kind() == reflect.Slice && e.IsNil() } // a wrapped list is checked by its caller
	errNull := errors.New("malformed JSON: the body must be an array of records, not null")
	if jc.Name != jsoncodec.Std {
		return readAll(body, length, func(b []byte) error {
			if err := jc.Unmarshal(b, v); err != nil {
				return jsonError(err)
			}
			if isNull() {
				return errNull
			}
			return nil
		})
	}
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if isNull() {
		return errNull
	}
	switch _, err := dec.Token(); {
	case err == io.EOF:
		return nil
	case err != nil:
		return jsonError(err)
	default:
		return errors.New("malformed JSON: data after the array")
	}
}

// jsonError describes a decoding error, keeping read errors (such as
// *http.MaxBytesError) reachable with errors.As.
func jsonError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("malformed JSON: truncated body: %w", err)
	}
	return fmt.Errorf("malformed JSON: %w", err)
}

// maxPreGrow bounds what a declared Content-Length reserves before any
// body byte has arrived (the full list is about 100 KB).
const maxPreGrow = 128 << 10

// decodeProtoBody reads a MeteoriteLandingList and converts every record, so
// invalid timestamps are caught as they would be by a real consumer.
func (h *restHandler) decodeProtoBody(body io.Reader, length int64) error {
	return readAll(body, length, func(b []byte) error {
		var list pb.MeteoriteLandingList
		if err := proto.Unmarshal(b, &list); err != nil {
			return fmt.Errorf("malformed protobuf: %w", err)
		}
		return convertList(&list)
	})
}

// readAll reads a whole body into a pooled buffer and hands it to decode.
func readAll(body io.Reader, length int64, decode func([]byte) error) error {
	buf := getBuffer()
	defer putBuffer(buf)
	// Grow for the declared length only up to a bound: a client that
	// declares 8 MiB and sends 2 bytes must not make the server hold 8 MiB
	// for the whole read timeout. Beyond it, ReadFrom grows as bytes arrive.
	if length > 0 {
		buf.Grow(int(min(length, maxPreGrow)))
	}
	if _, err := buf.ReadFrom(body); err != nil {
		return err
	}
	return decode(buf.Bytes())
}

// convertList converts every record of a list, failing on the first invalid one.
func convertList(list *pb.MeteoriteLandingList) error {
	for i, m := range list.GetMeteoriteLandings() {
		if _, err := data.FromProto(m); err != nil {
			return fmt.Errorf("invalid record %d: %w", i, err)
		}
	}
	return nil
}
