package server

// Content negotiation: which encoding a REST client asked for (Accept), and
// the header-list parsing it shares with Accept-Encoding (compress.go).

import (
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/api"
)

// pref is the response encoding a client asked for.
type pref uint8

const (
	prefNone  pref = iota // no preference stated (no Accept, or only wildcards)
	prefJSON              // JSON (or NDJSON) preferred
	prefProto             // protobuf preferred
)

// acceptPref reads the Accept header: protobuf when application/x-protobuf
// is listed with a q above that of any listed JSON type; JSON when a JSON type
// is listed (or protobuf is refused with q=0); no preference otherwise.
func acceptPref(vals []string) pref {
	if len(vals) == 0 {
		return prefNone
	}
	if len(vals) == 1 { // the common cases, without parsing
		switch vals[0] {
		case api.TypeProtobuf:
			return prefProto
		case api.TypeJSON, api.TypeNDJSON:
			return prefJSON
		case "*/*", "":
			return prefNone
		}
	}
	qp, qj := -1.0, -1.0
	listElements(vals, func(mt, params string) {
		switch {
		case isProtobufType(mt):
			qp = max(qp, qValue(params))
		case strings.EqualFold(mt, api.TypeJSON) || strings.EqualFold(mt, api.TypeNDJSON):
			qj = max(qj, qValue(params))
		}
	})
	switch {
	case qp > 0 && qp > qj:
		return prefProto
	case qj > 0 || qp == 0:
		return prefJSON
	}
	return prefNone
}

// listElements calls f with each element of a comma-separated header's
// values (Accept, Accept-Encoding): its media range or coding, trimmed of
// white space, and its parameters (what follows the first ';').
func listElements(vals []string, f func(elem, params string)) {
	for _, v := range vals {
		for v != "" {
			var part string
			part, v, _ = strings.Cut(v, ",")
			elem, params, _ := strings.Cut(part, ";")
			f(strings.TrimSpace(elem), params)
		}
	}
}

// qValue finds q=... among a media range's parameters; 1 when absent or
// unreadable.
func qValue(params string) float64 {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || q < 0 || q > 1 {
				return 1
			}
			return q
		}
	}
	return 1
}

// mediaType strips parameters and spaces from a Content-Type value.
func mediaType(v string) string {
	mt, _, _ := strings.Cut(v, ";")
	return strings.TrimSpace(mt)
}

func isProtobufType(mt string) bool {
	return strings.EqualFold(mt, api.TypeProtobuf) || strings.EqualFold(mt, "application/protobuf")
}
