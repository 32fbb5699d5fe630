// Package target is where each protocol's calls go: run's, check's,
// capacity's and fit's --target, given once for every protocol
// ("HOST:PORT", one port serving both HTTP/1.1 and gRPC, as `meteorbench
// serve` does) or per protocol ("rest=HOST:PORT,grpc=HOST:PORT", the REST
// and gRPC servers of most deployments, on ports of their own); and
// --server-pid, given the same two ways. Parsed once, asked one way: For(p).
package target

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/api"
)

// PerProtocol is a value given once for every protocol (All) or per
// protocol. In the per-protocol form rest-protobuf follows rest unless
// given; a protocol not given has the zero value.
type PerProtocol[T comparable] struct {
	All                      T
	REST, RESTProtobuf, GRPC T
}

// For is protocol p's value.
func (v PerProtocol[T]) For(p api.Protocol) T {
	var zero T
	if v.All != zero {
		return v.All
	}
	switch p {
	case api.REST:
		return v.REST
	case api.RESTProtobuf:
		if v.RESTProtobuf == zero {
			return v.REST
		}
		return v.RESTProtobuf
	case api.GRPC:
		return v.GRPC
	}
	return zero
}

// IsZero reports whether nothing was given.
func (v PerProtocol[T]) IsZero() bool { return v == PerProtocol[T]{} }

// Split reports whether the value was given per protocol.
func (v PerProtocol[T]) Split() bool { return !v.IsZero() && v.All == *new(T) }

// Protocols are the protocols that have a value, in api.Protocols' order.
func (v PerProtocol[T]) Protocols() []api.Protocol {
	var out []api.Protocol
	for _, p := range api.Protocols() {
		if v.For(p) != *new(T) {
			out = append(out, p)
		}
	}
	return out
}

// ByProtocol is the per-protocol form as a map keyed by protocol (a
// document's "targets"); nil for the single form.
func (v PerProtocol[T]) ByProtocol() map[string]T {
	if !v.Split() {
		return nil
	}
	out := map[string]T{}
	for _, p := range v.Protocols() {
		out[string(p)] = v.For(p)
	}
	return out
}

// String is the value as given: "X", or "rest=X,grpc=Y" (rest-protobuf
// named only when given apart from rest).
func (v PerProtocol[T]) String() string {
	var zero T
	if v.All != zero {
		return fmt.Sprint(v.All)
	}
	var parts []string
	for _, kv := range []struct {
		key string
		v   T
	}{{string(api.REST), v.REST}, {string(api.RESTProtobuf), v.RESTProtobuf}, {string(api.GRPC), v.GRPC}} {
		if kv.v != zero {
			parts = append(parts, kv.key+"="+fmt.Sprint(kv.v))
		}
	}
	return strings.Join(parts, ",")
}

// Parse reads a flag's value s: one value for every protocol, or
// KEY=VALUE,... with the keys rest, rest-protobuf and grpc, each at most
// once. parse reads one value. The errors are one line, for the flag
// parser to prefix with the flag's name.
func Parse[T comparable](s string, parse func(string) (T, error)) (PerProtocol[T], error) {
	var out PerProtocol[T]
	s = strings.TrimSpace(s)
	if s == "" {
		return out, errors.New("no value")
	}
	if !strings.Contains(s, "=") {
		v, err := parse(s)
		if err != nil {
			return out, err
		}
		out.All = v
		return out, nil
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		var dst *T
		switch api.Protocol(key) {
		case api.REST:
			dst = &out.REST
		case api.RESTProtobuf:
			dst = &out.RESTProtobuf
		case api.GRPC:
			dst = &out.GRPC
		}
		switch {
		case !ok:
			return out, fmt.Errorf("%q is not KEY=VALUE (give one value, or rest=...,grpc=...)", part)
		case dst == nil:
			return out, fmt.Errorf("unknown key %q (want rest, rest-protobuf or grpc)", key)
		case seen[key]:
			return out, fmt.Errorf("%s= given twice", key)
		case value == "":
			return out, fmt.Errorf("%s= has no value", key)
		}
		seen[key] = true
		v, err := parse(value)
		if err != nil {
			return out, fmt.Errorf("%s=: %w", key, err)
		}
		*dst = v
	}
	return out, nil
}

// Targets are the addresses (host:port) of the protocols' servers.
type Targets = PerProtocol[string]

// One is the single form: every protocol at addr ("" for none).
func One(addr string) Targets { return Targets{All: addr} }

// ParseTargets reads --target; checkAddr checks one host:port.
func ParseTargets(s string, checkAddr func(string) error) (Targets, error) {
	return Parse(s, func(v string) (string, error) { return v, checkAddr(v) })
}

// Address is one distinct address of Targets and what it serves: the
// HTTP/1.1 side (REST: /healthz, /metrics) and the gRPC side.
type Address struct {
	Addr      string
	HTTP1     bool // a REST protocol's address, or the single form's
	GRPC      bool // gRPC's address, or the single form's
	Protocols []api.Protocol
	Single    bool // the single form: one port serves both
}

// Addresses are t's distinct addresses among protocols, in their order.
func Addresses(t Targets, protocols []api.Protocol) []Address {
	var out []Address
	for _, p := range protocols {
		addr := t.For(p)
		if addr == "" {
			continue
		}
		i := slices.IndexFunc(out, func(a Address) bool { return a.Addr == addr })
		if i < 0 {
			out = append(out, Address{Addr: addr, Single: !t.Split()})
			i = len(out) - 1
		}
		a := &out[i]
		a.Protocols = append(a.Protocols, p)
		if a.Single || p != api.GRPC {
			a.HTTP1 = true
		}
		if a.Single || p == api.GRPC {
			a.GRPC = true
		}
	}
	return out
}

// PIDs are the server processes' ids (--server-pid).
type PIDs = PerProtocol[int]

// ParsePIDs reads --server-pid: a positive process id, once or per
// protocol. Whether the process exists is checked when it is read.
func ParsePIDs(s string) (PIDs, error) {
	return Parse(s, func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%q: want a process id (a positive number)", v)
		}
		return n, nil
	})
}
