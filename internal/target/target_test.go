package target

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
)

func checkAddr(s string) error {
	if !strings.Contains(s, ":") {
		return errors.New("not host:port")
	}
	return nil
}

func TestParseTargets(t *testing.T) {
	for _, c := range []struct {
		in                       string
		rest, restProtobuf, gRPC string
		split                    bool
		protocols                int
	}{
		{"127.0.0.1:8080", "127.0.0.1:8080", "127.0.0.1:8080", "127.0.0.1:8080", false, len(api.Protocols())}, // the one port serves every protocol
		{"rest=a:1,grpc=b:2", "a:1", "a:1", "b:2", true, 3},
		{"grpc=b:2", "", "", "b:2", true, 1},
		{"rest=a:1", "a:1", "a:1", "", true, 2},
		{" rest = a:1 , rest-protobuf=c:3 ", "a:1", "c:3", "", true, 2},
		{"rest=a:1,grpc=b:2,grpc-web=c:3,connect=d:4", "a:1", "a:1", "b:2", true, 5},
	} {
		got, err := ParseTargets(c.in, checkAddr)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got.For(api.REST) != c.rest || got.For(api.RESTProtobuf) != c.restProtobuf || got.For(api.GRPC) != c.gRPC ||
			got.Split() != c.split || len(got.Protocols()) != c.protocols {
			t.Errorf("%q: %+v", c.in, got)
		}
		again, err := ParseTargets(got.String(), checkAddr)
		if err != nil || again != got {
			t.Errorf("%q: String %q parses to %+v, %v", c.in, got.String(), again, err)
		}
	}
	web, _ := ParseTargets("grpc=b:2,connect=d:4,grpc-web=c:3", checkAddr)
	if web.For(api.GRPCWeb) != "c:3" || web.For(api.Connect) != "d:4" || web.For(api.REST) != "" ||
		web.String() != "grpc=b:2,grpc-web=c:3,connect=d:4" || !slices.Equal(web.Protocols(), []api.Protocol{api.GRPC, api.GRPCWeb, api.Connect}) {
		t.Errorf("web keys: %+v, %q, %v", web, web.String(), web.Protocols())
	}
	if rest, _ := ParseTargets("rest=a:1", checkAddr); rest.For(api.GRPCWeb) != "" || rest.For(api.Connect) != "" {
		t.Errorf("rest=a:1 gives the web protocols %q, %q; want no address", rest.For(api.GRPCWeb), rest.For(api.Connect))
	}
	for in, want := range map[string]string{
		"connect=a:1,connect=b:2": "connect= given twice",
		"":                        "no value",
		"rest=a:1,soap=b:2":       `unknown key "soap"`,
		"rest=a:1,rest=b:2":       "rest= given twice",
		"grpc=":                   "grpc= has no value",
		"grpc=nohost":             "grpc=: not host:port",
		"rest=a:1,b:2":            `"b:2" is not KEY=VALUE`,
		"nohost":                  "not host:port",
	} {
		if _, err := ParseTargets(in, checkAddr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

func TestAddresses(t *testing.T) {
	one := Addresses(One("h:1"), api.Protocols())
	if len(one) != 1 || !one[0].HTTP1 || !one[0].GRPC || !one[0].Single || len(one[0].Protocols) != len(api.Protocols()) {
		t.Errorf("single form: %+v", one)
	}
	two, _ := ParseTargets("rest=h:1,grpc=h:2", checkAddr)
	as := Addresses(two, api.Protocols())
	if len(as) != 2 || !as[0].HTTP1 || as[0].GRPC || as[1].HTTP1 || !as[1].GRPC || as[1].Addr != "h:2" {
		t.Errorf("two ports: %+v", as)
	}
	// A web protocol's address is plain HTTP, as REST's: HTTP/1.1 asked.
	web, _ := ParseTargets("grpc=h:2,grpc-web=h:3", checkAddr)
	if as := Addresses(web, api.Protocols()); len(as) != 2 || as[0].HTTP1 || !as[0].GRPC || !as[1].HTTP1 || as[1].GRPC || as[1].Addr != "h:3" {
		t.Errorf("gRPC and gRPC-Web apart: %+v", as)
	}
	same, _ := ParseTargets("rest=h:1,grpc=h:1", checkAddr)
	if as := Addresses(same, api.Protocols()); len(as) != 1 || !as[0].HTTP1 || !as[0].GRPC {
		t.Errorf("both keys at one port: %+v", as)
	}
}

func TestParsePIDs(t *testing.T) {
	p, err := ParsePIDs("rest=10,grpc=20")
	if err != nil || p.For(api.REST) != "10" || p.For(api.RESTProtobuf) != "10" || p.For(api.GRPC) != "20" || p.String() != "rest=10,grpc=20" {
		t.Errorf("%+v %v", p, err)
	}
	// Several processes per protocol, summed: a proxy and its server.
	p, err = ParsePIDs("rest=10+11,grpc=10 + 12")
	if err != nil || !slices.Equal(p.For(api.REST).List(), []int{10, 11}) || !slices.Equal(p.For(api.GRPC).List(), []int{10, 12}) || p.String() != "rest=10+11,grpc=10+12" {
		t.Errorf("%+v %v", p, err)
	}
	for _, in := range []string{"0", "-3", "abc", "rest=1,rest=2", "web=1", "1+", "1+1", "+2", "1+x"} {
		if _, err := ParsePIDs(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
