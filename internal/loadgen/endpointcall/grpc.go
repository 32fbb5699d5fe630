package endpointcall

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/grpccall"
	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/results"
)

// GRPC is a user's gRPC method: where it is, its descriptor, the request
// and metadata every call sends, and how its answers decode.
type GRPC struct {
	Addr     string
	Method   protoreflect.MethodDescriptor
	Request  *dynamicpb.Message
	Metadata metadata.MD // nil: none
	// encoded is Request's encoding, made once: every call sends these
	// bytes (the request is fixed), as generated code marshals a message
	// held ready, without encoding it again per call.
	encoded encodedRequest
	out     *payload.Compiled
	dynamic string // why the answers decode with dynamicpb ("" when compiled)
}

// Name is "items.Items/List at 127.0.0.1:9090".
func (g *GRPC) Name() string {
	return string(g.Method.Parent().FullName()) + "/" + string(g.Method.Name()) + " at " + g.Addr
}

// fullMethod is the method's path: "/items.Items/List".
func (g *GRPC) fullMethod() string {
	return "/" + string(g.Method.Parent().FullName()) + "/" + string(g.Method.Name())
}

// Decoding is how the answers decode: by the compiled codec of the output
// type, or with dynamicpb where that codec cannot (a map field, a
// recursive message...).
func (g *GRPC) Decoding() results.Decoding {
	if g.out != nil {
		return results.DecodeCompiled
	}
	return results.DecodeDynamic
}

// Output is the compiled output type (nil when the answers decode with
// dynamicpb): a REST answer of the same question decodes into its JSON
// mapping.
func (g *GRPC) Output() *payload.Compiled { return g.out }

// GRPCSpec is what run's flags, or a pair of an endpoints file, say of a
// gRPC endpoint.
type GRPCSpec struct {
	Addr    string // --grpc-addr host:port
	Method  string // --grpc-method package.Service/Method
	Schema  string // --schema FILE.proto; "" asks the server (reflection)
	Request string // --grpc-request FILE.json; "" sends RequestJSON, else the empty message
	// RequestJSON is the request inline (an endpoints file's), when no
	// Request file is given.
	RequestJSON []byte
	// Metadata goes with every call (--header, a file's metadata).
	Metadata metadata.MD
	// TLS and Token are the run's, for asking the server's reflection
	// service (without Schema); TLS nil is plaintext.
	TLS   *tls.Config
	Token string
	// At names where each of "addr", "method", "schema" and "request"
	// was given, for the errors; nil: run's flags.
	At func(field string) string
}

// at names where field was given: "--grpc-method", or an endpoints
// file's place.
func (s GRPCSpec) at(field string) string {
	if s.At != nil {
		return s.At(field)
	}
	return map[string]string{"addr": "--grpc-addr", "method": "--grpc-method", "schema": "--schema", "request": "--grpc-request"}[field]
}

// LoadGRPC resolves the method (from the .proto, parsed here, or from the
// server's reflection service), reads the request as the protobuf JSON
// mapping of its input type, and compiles the output type's codec. Every
// failure is one line naming the flag (or the file's place).
func LoadGRPC(ctx context.Context, s GRPCSpec) (*GRPC, error) {
	if _, _, err := net.SplitHostPort(s.Addr); err != nil {
		return nil, fmt.Errorf("%s %q: want host:port", s.at("addr"), s.Addr)
	}
	svc, name, ok := strings.Cut(strings.TrimPrefix(s.Method, "/"), "/")
	if !ok || svc == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("%s %q: want package.Service/Method", s.at("method"), s.Method)
	}
	var sd protoreflect.ServiceDescriptor
	var err error
	if s.Schema != "" {
		sd, err = serviceFromSchema(ctx, s, svc)
	} else {
		sd, err = serviceByReflection(ctx, s, svc)
	}
	if err != nil {
		return nil, err
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil, fmt.Errorf("%s %q: service %s has no method %s (it has %s)", s.at("method"), s.Method, svc, name, methodNames(sd))
	}
	if md.IsStreamingClient() {
		return nil, fmt.Errorf("%s %q: client-streaming methods are not measured (unary and server-streaming are)", s.at("method"), s.Method)
	}
	req := dynamicpb.NewMessage(md.Input())
	raw, where := s.RequestJSON, s.at("request")
	if s.Request != "" {
		if raw, err = os.ReadFile(s.Request); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		where += " " + s.Request
	}
	if raw != nil {
		if err := protojson.Unmarshal(raw, req); err != nil {
			return nil, fmt.Errorf("%s: not a %s in protobuf JSON: %s", where, md.Input().FullName(), strings.Join(strings.Fields(err.Error()), " "))
		}
	}
	g := &GRPC{Addr: s.Addr, Method: md, Request: req, Metadata: s.Metadata}
	if g.encoded, err = (proto.MarshalOptions{Deterministic: true}).Marshal(req); err != nil {
		return nil, fmt.Errorf("%s: the request does not encode as a %s: %v", where, md.Input().FullName(), err)
	}
	if g.out, err = payload.Compile(md.Output()); err != nil {
		g.dynamic = err.Error()
	}
	return g, nil
}

// methodNames lists a service's methods: "List, Get".
func methodNames(sd protoreflect.ServiceDescriptor) string {
	var names []string
	for i := range sd.Methods().Len() {
		names = append(names, string(sd.Methods().Get(i).Name()))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// grpcClient calls the pairs' methods: one set of connections per
// address, shared by the pairs there.
type grpcClient struct {
	e     *Endpoints
	o     call.Options
	conns map[string]*grpcConns
}

// grpcConns are one address's connections; each caller takes the next,
// round-robin.
type grpcConns struct {
	list []*grpc.ClientConn
	next int
}

// Caller implements call.Client: a caller of pair sc's method (the one
// pair's, for a single pair).
func (c *grpcClient) Caller(sc api.Scenario) (call.Caller, error) {
	p := c.e.called(sc)
	if p == nil || p.GRPC == nil {
		return nil, fmt.Errorf("endpointcall: no gRPC method for %s", sc)
	}
	ep := p.GRPC
	cs := c.conns[ep.Addr]
	if cs == nil {
		o := c.o
		o.Target = ep.Addr
		list, err := grpccall.Dial(o)
		if err != nil {
			return nil, err
		}
		cs = &grpcConns{list: list}
		c.conns[ep.Addr] = cs
	}
	cc := cs.list[cs.next%len(cs.list)]
	cs.next++
	codec := &checkingCodec{TimingCodec: grpccall.NewTimingCodec()}
	return &grpcCaller{ep: ep, cc: cc, codec: codec, method: ep.fullMethod(),
		opts: []grpc.CallOption{grpc.ForceCodecV2(codec)}}, nil
}

// Close implements call.Client.
func (c *grpcClient) Close() error {
	for _, cs := range c.conns {
		for _, cc := range cs.list {
			cc.Close()
		}
	}
	return nil
}

// grpcCaller makes the method's call: status OK, and every answer decodes
// as the method's output type (into a dynamic message, timed).
type grpcCaller struct {
	ep     *GRPC
	cc     *grpc.ClientConn
	codec  *checkingCodec
	method string
	opts   []grpc.CallOption
}

var serverStream = &grpc.StreamDesc{ServerStreams: true}

func (a *grpcCaller) Call(ctx context.Context) (call.Outcome, error) {
	a.codec.Decode, a.codec.err = 0, nil
	timer := call.StartTimer()
	if a.ep.Metadata != nil {
		ctx = metadata.NewOutgoingContext(ctx, a.ep.Metadata)
	}
	out := a.answer()
	if !a.ep.Method.IsStreamingServer() {
		if err := a.cc.Invoke(ctx, a.method, a.ep.encoded, out, a.opts...); err != nil {
			return call.Outcome{}, a.classify(err)
		}
		timer.AddDecode(a.codec.Decode)
		return timer.Outcome(), nil
	}
	ctx, cancel := context.WithCancel(ctx) // ends the stream on an early return
	defer cancel()
	st, err := a.cc.NewStream(ctx, serverStream, a.method, a.opts...)
	if err == nil {
		err = st.SendMsg(a.ep.encoded)
	}
	if err == nil {
		err = st.CloseSend()
	}
	for err == nil {
		if err = st.RecvMsg(out); err == nil {
			timer.Record()
		}
	}
	if err != io.EOF {
		return call.Outcome{}, a.classify(err)
	}
	timer.AddDecode(a.codec.Decode)
	return timer.Outcome(), nil
}

// answer is a message to decode the answers into: the compiled output
// type's (payload.Codec decodes it with the compiled codec, each message
// into a new value, as generated code decodes into a reset message), or a
// dynamic message.
func (a *grpcCaller) answer() any {
	if a.ep.out != nil {
		return a.ep.out.New()
	}
	return dynamicpb.NewMessage(a.ep.Method.Output()) // proto.Unmarshal resets it per message
}

// classify is grpccall.Classify, except for an answer that did not decode
// as the method's output type: an invalid response.
func (a *grpcCaller) classify(err error) error {
	if a.codec.err != nil {
		return call.Invalid("answer does not decode as %s: %v", a.ep.Method.Output().FullName(), a.codec.err)
	}
	return grpccall.Classify(err)
}

// encodedRequest is a request encoded once: payload.Codec (under the
// timing codec) sends its bytes as they are.
type encodedRequest []byte

// AppendProto implements payload.Message.
func (r encodedRequest) AppendProto(b []byte) ([]byte, error) { return append(b, r...), nil }

// UnmarshalProto implements payload.Message; a request is never received.
func (r encodedRequest) UnmarshalProto([]byte) error {
	return fmt.Errorf("endpointcall: a request is sent, not received")
}

// checkingCodec is the timed codec, keeping its last decoding failure
// (grpc-go reports it as an Internal status, as it would a server's).
type checkingCodec struct {
	*grpccall.TimingCodec
	err error
}

// Unmarshal implements encoding.CodecV2.
func (c *checkingCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.TimingCodec.Unmarshal(data, v)
	if err != nil {
		c.err = err
	}
	return err
}
