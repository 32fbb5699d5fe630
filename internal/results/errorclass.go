package results

import (
	"sort"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/internal/format"
)

// An ErrorClass names why a call failed, as the JSON documents spell it:
// "timeout", "transport", "protocol", "invalid-response", "abandoned", an HTTP status
// "http-<code>" (HTTPClass) or a gRPC status code "grpc-<Code>" (GRPCClass).
// Code asks its predicates, never compares the text.
type ErrorClass string

// The classes that are not a status code.
const (
	// ClassInvalid is an answer that arrived but is wrong: undecodable,
	// wrong content type, wrong version string, wrong records.
	ClassInvalid ErrorClass = "invalid-response"
	// ClassTimeout is a call that did not end within its deadline (the
	// per-call --timeout, or the cell's hard time bound).
	ClassTimeout ErrorClass = "timeout"
	// ClassTransport is a failure to connect, send or receive.
	ClassTransport ErrorClass = "transport"
	// ClassProtocol is a peer that broke the wire protocol: an HTTP/2
	// frame, setting, flow-control window, GOAWAY or RST_STREAM the
	// client refuses, or an HTTP/1.1 answer whose framing is out of
	// bounds (a header block without end, an absurd Content-Length). The
	// message names the frame or field.
	ClassProtocol ErrorClass = "protocol"
	// ClassCancelled is a call cut short because the run was cancelled
	// (interrupted); such calls are dropped, not counted as errors.
	ClassCancelled ErrorClass = "cancelled"
	// ClassAbandoned is a call still running at a cell's hard end (its soft
	// end plus a grace): the target stalled it. It counts as a failed call
	// in every figure.
	ClassAbandoned ErrorClass = "abandoned"
)

const (
	httpPrefix = "http-"
	grpcPrefix = "grpc-"
)

// HTTPClass is the class of an answer with an unexpected HTTP status:
// "http-503".
func HTTPClass(code int) ErrorClass { return ErrorClass(httpPrefix + strconv.Itoa(code)) }

// GRPCClass is the class of a gRPC status code other than OK, named as
// codes.Code.String spells it: "grpc-Unavailable".
func GRPCClass(code string) ErrorClass { return ErrorClass(grpcPrefix + code) }

// HTTPStatus is the status of an HTTP status class ("http-503": 503, true).
func (c ErrorClass) HTTPStatus() (int, bool) {
	s, ok := strings.CutPrefix(string(c), httpPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// GRPCCode is the code of a gRPC status class ("grpc-Unavailable":
// "Unavailable", true).
func (c ErrorClass) GRPCCode() (string, bool) {
	s, ok := strings.CutPrefix(string(c), grpcPrefix)
	return s, ok && s != ""
}

// Unreachable reports whether the target could not be reached at all: a
// transport failure, or grpc-Unavailable (how grpc-go reports a connection
// it cannot make).
func (c ErrorClass) Unreachable() bool {
	code, _ := c.GRPCCode()
	return c == ClassTransport || code == "Unavailable"
}

// Auth reports whether the target refused the call's credentials: HTTP 401
// or 403, gRPC Unauthenticated or PermissionDenied.
func (c ErrorClass) Auth() bool {
	if s, ok := c.HTTPStatus(); ok {
		return s == 401 || s == 403
	}
	code, _ := c.GRPCCode()
	return code == "Unauthenticated" || code == "PermissionDenied"
}

// InvalidResponse reports whether an answer arrived but was wrong.
func (c ErrorClass) InvalidResponse() bool { return c == ClassInvalid }

// Protocol reports whether the peer broke the wire protocol.
func (c ErrorClass) Protocol() bool { return c == ClassProtocol }

// Timeout reports whether the call did not end within its deadline.
func (c ErrorClass) Timeout() bool { return c == ClassTimeout }

// Cancelled reports whether the run's cancellation cut the call short.
func (c ErrorClass) Cancelled() bool { return c == ClassCancelled }

// Abandoned reports whether the call was still running at its cell's hard
// end.
func (c ErrorClass) Abandoned() bool { return c == ClassAbandoned }

// ErrorCounts counts failed calls by class.
type ErrorCounts map[ErrorClass]int64

// Sorted returns the classes, most frequent first, then by name.
func (m ErrorCounts) Sorted() []ErrorClass {
	names := make([]ErrorClass, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if m[names[i]] != m[names[j]] {
			return m[names[i]] > m[names[j]]
		}
		return names[i] < names[j]
	})
	return names
}

// String lists the counts, most frequent first: "timeout 3, http-503 1".
func (m ErrorCounts) String() string {
	names := m.Sorted()
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = string(k) + " " + format.Count(m[k])
	}
	return strings.Join(parts, ", ")
}
