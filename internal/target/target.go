// Package target is where each protocol's calls go: run's, check's,
// capacity's and fit's --target, given once for every protocol
// ("HOST:PORT", one port serving both HTTP/1.1 and gRPC, as `meteorbench
// serve` does) or per protocol ("rest=HOST:PORT,grpc=HOST:PORT", the REST
// and gRPC servers of most deployments, on ports of their own; gRPC-Web
// and Connect, when a proxy or a server of their own serves them, with
// grpc-web= and connect=); and --server-pid, given the same two ways.
// Parsed once, asked one way: For(p).
package target

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
)

// PerProtocol is a value given once for every protocol (All) or per
// protocol, keyed by the protocols' names (api.Protocols). In the
// per-protocol form rest-protobuf follows rest unless given; a protocol
// not given has the zero value.
type PerProtocol[T comparable] struct {
	All                                        T
	REST, RESTProtobuf, GRPC, GRPCWeb, Connect T
}

// field is protocol p's own field (nil for an unknown protocol).
func (v *PerProtocol[T]) field(p api.Protocol) *T {
	switch p {
	case api.REST:
		return &v.REST
	case api.RESTProtobuf:
		return &v.RESTProtobuf
	case api.GRPC:
		return &v.GRPC
	case api.GRPCWeb:
		return &v.GRPCWeb
	case api.Connect:
		return &v.Connect
	}
	return nil
}

// For is protocol p's value.
func (v PerProtocol[T]) For(p api.Protocol) T {
	var zero T
	if v.All != zero {
		return v.All
	}
	if p == api.RESTProtobuf && v.RESTProtobuf == zero {
		return v.REST
	}
	if f := v.field(p); f != nil {
		return *f
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
	for _, p := range api.Protocols() {
		if f := v.field(p); *f != zero {
			parts = append(parts, string(p)+"="+fmt.Sprint(*f))
		}
	}
	return strings.Join(parts, ",")
}

// Parse reads a flag's value s: one value for every protocol, or
// KEY=VALUE,... whose keys are protocols' names (rest, rest-protobuf,
// grpc, grpc-web, connect), each at most once. parse reads one value. The
// errors are one line, for the flag parser to prefix with the flag's name.
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
		dst := out.field(api.Protocol(key))
		switch {
		case !ok:
			return out, fmt.Errorf("%q is not KEY=VALUE (give one value, or rest=...,grpc=...)", part)
		case dst == nil:
			return out, fmt.Errorf("unknown key %q (want %s)", key, format.Names(api.Protocols()))
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
	HTTP1     bool // the address of a protocol other than gRPC (REST, gRPC-Web, Connect: plain HTTP), or the single form's
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
type PIDs = PerProtocol[PIDSet]

// PIDSet is one protocol's server processes, whose CPU is summed: one
// process id, or several joined by "+" (a proxy and the server behind
// it: "P1+P2"), as given; "" for none.
type PIDSet string

// List is the process ids of s.
func (s PIDSet) List() []int {
	var out []int
	for _, f := range strings.Split(string(s), "+") {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// ParsePIDs reads --server-pid: positive process ids joined by "+", once
// or per protocol ("rest=P1+P2,grpc=P1+P3"). Whether the processes exist
// is checked when they are read.
func ParsePIDs(s string) (PIDs, error) {
	return Parse(s, func(v string) (PIDSet, error) {
		var ids []string
		for _, f := range strings.Split(v, "+") {
			f = strings.TrimSpace(f)
			n, err := strconv.Atoi(f)
			if err != nil || n <= 0 {
				return "", fmt.Errorf("%q: want a process id (a positive number), or several joined by +", v)
			}
			if slices.Contains(ids, strconv.Itoa(n)) {
				return "", fmt.Errorf("%q: process %d given twice", v, n)
			}
			ids = append(ids, strconv.Itoa(n))
		}
		return PIDSet(strings.Join(ids, "+")), nil
	})
}
