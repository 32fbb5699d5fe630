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
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/grpccall"
)

// GRPC is a user's gRPC method: where it is, its descriptor and the
// request every call sends.
type GRPC struct {
	Addr    string
	Method  protoreflect.MethodDescriptor
	Request *dynamicpb.Message
}

// Name is "items.Items/List at 127.0.0.1:9090".
func (g *GRPC) Name() string {
	return string(g.Method.Parent().FullName()) + "/" + string(g.Method.Name()) + " at " + g.Addr
}

// fullMethod is the method's path: "/items.Items/List".
func (g *GRPC) fullMethod() string {
	return "/" + string(g.Method.Parent().FullName()) + "/" + string(g.Method.Name())
}

// GRPCSpec is what run's flags say of a gRPC endpoint.
type GRPCSpec struct {
	Addr    string // --grpc-addr host:port
	Method  string // --grpc-method package.Service/Method
	Schema  string // --schema FILE.proto; "" asks the server (reflection)
	Request string // --grpc-request FILE.json; "" sends the empty message
	// TLS and Token are the run's, for asking the server's reflection
	// service (without Schema); TLS nil is plaintext.
	TLS   *tls.Config
	Token string
}

// LoadGRPC resolves the method (from the .proto, parsed here, or from the
// server's reflection service) and reads the request as the protobuf JSON
// mapping of its input type. Every failure is one line naming the flag.
func LoadGRPC(ctx context.Context, s GRPCSpec) (*GRPC, error) {
	if _, _, err := net.SplitHostPort(s.Addr); err != nil {
		return nil, fmt.Errorf("--grpc-addr %q: want host:port", s.Addr)
	}
	svc, name, ok := strings.Cut(strings.TrimPrefix(s.Method, "/"), "/")
	if !ok || svc == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("--grpc-method %q: want package.Service/Method", s.Method)
	}
	var sd protoreflect.ServiceDescriptor
	var err error
	if s.Schema != "" {
		sd, err = serviceFromSchema(ctx, s.Schema, svc)
	} else {
		sd, err = serviceByReflection(ctx, s, svc)
	}
	if err != nil {
		return nil, err
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil, fmt.Errorf("--grpc-method %q: service %s has no method %s (it has %s)", s.Method, svc, name, methodNames(sd))
	}
	if md.IsStreamingClient() {
		return nil, fmt.Errorf("--grpc-method %q: client-streaming methods are not measured (unary and server-streaming are)", s.Method)
	}
	req := dynamicpb.NewMessage(md.Input())
	if s.Request != "" {
		b, err := os.ReadFile(s.Request)
		if err != nil {
			return nil, fmt.Errorf("--grpc-request: %w", err)
		}
		if err := protojson.Unmarshal(b, req); err != nil {
			return nil, fmt.Errorf("--grpc-request %s: not a %s in protobuf JSON: %s", s.Request, md.Input().FullName(), strings.Join(strings.Fields(err.Error()), " "))
		}
	}
	return &GRPC{Addr: s.Addr, Method: md, Request: req}, nil
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

// grpcClient calls a gRPC method over the contract's connections.
type grpcClient struct {
	ep    *GRPC
	conns []*grpc.ClientConn
	next  int
}

func newGRPCClient(ep *GRPC, o call.Options) (*grpcClient, error) {
	conns, err := grpccall.Dial(o)
	if err != nil {
		return nil, err
	}
	return &grpcClient{ep: ep, conns: conns}, nil
}

// Caller implements call.Client; every scenario is the method's call. Each
// caller takes the next connection, round-robin.
func (c *grpcClient) Caller(api.Scenario) (call.Caller, error) {
	cc := c.conns[c.next%len(c.conns)]
	c.next++
	codec := &checkingCodec{TimingCodec: grpccall.NewTimingCodec()}
	return &grpcCaller{ep: c.ep, cc: cc, codec: codec, method: c.ep.fullMethod(),
		opts: []grpc.CallOption{grpc.ForceCodecV2(codec)}}, nil
}

// Close implements call.Client.
func (c *grpcClient) Close() error {
	for _, cc := range c.conns {
		cc.Close()
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
	out := dynamicpb.NewMessage(a.ep.Method.Output())
	if !a.ep.Method.IsStreamingServer() {
		if err := a.cc.Invoke(ctx, a.method, a.ep.Request, out, a.opts...); err != nil {
			return call.Outcome{}, a.classify(err)
		}
		timer.AddDecode(a.codec.Decode)
		return timer.Outcome(), nil
	}
	ctx, cancel := context.WithCancel(ctx) // ends the stream on an early return
	defer cancel()
	st, err := a.cc.NewStream(ctx, serverStream, a.method, a.opts...)
	if err == nil {
		err = st.SendMsg(a.ep.Request)
	}
	if err == nil {
		err = st.CloseSend()
	}
	for err == nil {
		if err = st.RecvMsg(out); err == nil {
			timer.Record()
			out.Reset()
		}
	}
	if err != io.EOF {
		return call.Outcome{}, a.classify(err)
	}
	timer.AddDecode(a.codec.Decode)
	return timer.Outcome(), nil
}

// classify is grpccall.Classify, except for an answer that did not decode
// as the method's output type: an invalid response.
func (a *grpcCaller) classify(err error) error {
	if a.codec.err != nil {
		return call.Invalid("answer does not decode as %s: %v", a.ep.Method.Output().FullName(), a.codec.err)
	}
	return grpccall.Classify(err)
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
