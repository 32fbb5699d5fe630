package endpointcall

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// ReflectionTimeout bounds asking a server's reflection service for a
// method's descriptors.
const ReflectionTimeout = 5 * time.Second

// serviceFromSchema parses a .proto at run time (imports resolved from its
// folder, and the well-known types built in) and finds the service.
func serviceFromSchema(ctx context.Context, s GRPCSpec, svc string) (protoreflect.ServiceDescriptor, error) {
	file := s.Schema
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{filepath.Dir(file)}}),
	}
	files, err := c.Compile(ctx, filepath.Base(file))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %s", s.at("schema"), file, strings.Join(strings.Fields(err.Error()), " "))
	}
	d, err := files.AsResolver().FindDescriptorByName(protoreflect.FullName(svc))
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if err != nil || !ok {
		return nil, fmt.Errorf("%s: %s has no service %s (it has %s)", s.at("method"), file, svc, serviceNames(files[0].Services()))
	}
	return sd, nil
}

// serviceNames lists the services of a file.
func serviceNames(sds protoreflect.ServiceDescriptors) string {
	var names []string
	for i := range sds.Len() {
		names = append(names, string(sds.Get(i).FullName()))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// serviceByReflection asks the server's reflection service (v1) for the
// file that defines the service, with its dependencies.
func serviceByReflection(ctx context.Context, s GRPCSpec, svc string) (protoreflect.ServiceDescriptor, error) {
	creds := insecure.NewCredentials()
	if s.TLS != nil {
		tc := s.TLS.Clone()
		tc.NextProtos = []string{"h2"}
		creds = credentials.NewTLS(tc)
	}
	cc, err := grpc.NewClient("passthrough:///"+s.Addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.at("addr"), err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(ctx, ReflectionTimeout)
	defer cancel()
	if s.Metadata != nil {
		ctx = metadata.NewOutgoingContext(ctx, s.Metadata)
	}
	if s.Token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+s.Token)
	}
	st, err := rpb.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
	if err == nil {
		err = st.Send(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: svc}})
	}
	var resp *rpb.ServerReflectionResponse
	if err == nil {
		resp, err = st.Recv()
		st.CloseSend()
	}
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			return nil, fmt.Errorf("%s: the server has no reflection service (grpc.reflection.v1): give its .proto with --schema", s.at("method"))
		}
		return nil, fmt.Errorf("%s: server reflection: %s", s.at("method"), status.Convert(err).Message())
	}
	if e := resp.GetErrorResponse(); e != nil {
		return nil, fmt.Errorf("%s: the server does not know service %s (%s)", s.at("method"), svc, e.GetErrorMessage())
	}
	set := &descriptorpb.FileDescriptorSet{}
	have := map[string]bool{}
	for _, b := range resp.GetFileDescriptorResponse().GetFileDescriptorProto() {
		fd := &descriptorpb.FileDescriptorProto{}
		if err := proto.Unmarshal(b, fd); err != nil {
			return nil, fmt.Errorf("%s: server reflection sent a bad descriptor: %v", s.at("method"), err)
		}
		set.File = append(set.File, fd)
		have[fd.GetName()] = true
	}
	// A dependency the server left out (one it assumes known, such as a
	// well-known type) comes from this binary's registry.
	for i := 0; i < len(set.File); i++ {
		for _, dep := range set.File[i].GetDependency() {
			if have[dep] {
				continue
			}
			if fd, err := protoregistry.GlobalFiles.FindFileByPath(dep); err == nil {
				set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
				have[dep] = true
			}
		}
	}
	files, err := protodesc.NewFiles(set)
	if err != nil {
		return nil, fmt.Errorf("%s: server reflection's descriptors: %v", s.at("method"), err)
	}
	d, err := files.FindDescriptorByName(protoreflect.FullName(svc))
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if err != nil || !ok {
		return nil, fmt.Errorf("%s: the server does not describe service %s", s.at("method"), svc)
	}
	return sd, nil
}
