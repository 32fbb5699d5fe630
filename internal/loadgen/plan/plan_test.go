package plan

import (
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/golden"
	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/loadgen/endpointcall"
	"github.com/meteorbench/meteorbench/internal/loadgen/lean"
	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/target"
)

var updatePlan = flag.Bool("update", false, "rewrite testdata/plan.txt")

// sweepConfig varies every dimension a run can sweep, with repeats.
func sweepConfig() Config {
	l, err := link.Parse("100mbit/20ms")
	if err != nil {
		panic(err)
	}
	return Config{
		Target:      target.One("127.0.0.1:1"),
		Protocols:   []api.Protocol{api.GRPC, api.REST},
		Scenarios:   []api.Scenario{api.Small, api.Large},
		Batches:     []int{10, 3},
		Concurrency: []int{4, 1},
		Links:       []link.Spec{{}, l},
		Records:     []int{10, 100},
		Compress:    []string{CompressGzip, CompressNone},
		TLS:         []bool{false, true},
		Rate:        50,
		ServerCPUs:  1,
		Repeat:      2,
	}
}

// The plan measures a multi-dimension sweep in the order it did before
// dimensions became a table: testdata/plan.txt was written by the nested
// loops. -update rewrites it.
func TestPlanOrderUnchanged(t *testing.T) {
	var b strings.Builder
	for _, s := range sweepConfig().WithDefaults().Specs() {
		fmt.Fprintf(&b, "%s r%d\n", s.Key(), s.Repeat)
	}
	golden.Check(t, filepath.Join("testdata", "plan.txt"), []byte(b.String()), *updatePlan)
}

// The plan walks every dimension of a condition, each once: a dimension
// declared in results.Dimensions without its plan entry would never vary.
func TestPlanDimensionsMatchResults(t *testing.T) {
	seen := map[string]int{}
	for _, d := range planTable() {
		seen[d.field]++
	}
	for _, d := range results.Dimensions {
		if seen[d.Field] != 1 {
			t.Errorf("dimension %s: %d plan entries, want 1", d.Field, seen[d.Field])
		}
		delete(seen, d.Field)
	}
	for f := range seen {
		t.Errorf("plan entry %s is no results dimension", f)
	}
}

// Settings records each swept dimension as before the plan table did it.
func TestSettingsOfSweep(t *testing.T) {
	s := sweepConfig().WithDefaults().Settings()
	if s.Rate != 50 || !slices.Equal(s.Concurrency, []int{4, 1}) || !slices.Equal(s.Links, []string{"none", "100mbit/20ms"}) ||
		!slices.Equal(s.Records, []int{10, 100}) || !slices.Equal(s.Compress, []string{CompressGzip, CompressNone}) {
		t.Errorf("settings: %+v", s)
	}
	d := Config{Target: target.One("x")}.WithDefaults().Settings()
	if d.Links != nil || d.Records != nil || d.Compress != nil || d.Rate != 0 || !slices.Equal(d.Concurrency, []int{1}) {
		t.Errorf("default settings: %+v", d)
	}
}

// A dimension that applies to some protocols only (its
// results.Dimension's Protocols, as a JSON codec applies to rest alone)
// measures the others once per combination of the other dimensions, at its
// default.
func TestPlanDimensionForSomeProtocols(t *testing.T) {
	i := slices.IndexFunc(results.Dimensions, func(d results.Dimension) bool { return d.Field == "compress" })
	saved := results.Dimensions[i].Protocols
	t.Cleanup(func() { results.Dimensions[i].Protocols = saved })
	results.Dimensions[i].Protocols = []api.Protocol{api.REST}

	cfg := Config{
		Target: target.One("x"), Protocols: []api.Protocol{api.REST, api.GRPC}, Scenarios: []api.Scenario{api.Small},
		Batches: []int{1}, Concurrency: []int{1, 2}, Compress: []string{CompressGzip, CompressNone},
	}
	var got []string
	for _, k := range cfg.Cells() {
		got = append(got, k.Key())
	}
	want := []string{
		"small/rest/b1/c1/gzip", "small/grpc/b1/c1", "small/rest/b1/c1",
		"small/rest/b1/c2/gzip", "small/grpc/b1/c2", "small/rest/b1/c2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("cells\n got %q\nwant %q", got, want)
	}
}

// gRPC and the HTTP version: measured at the default (grpc-go's HTTP/2)
// once for 1.1 and 2, and at 3 (results.Dimension.Also), whatever order
// the sweep names them in; with 3 alone, at 3 only.
func TestPlanGRPCAtHTTP3(t *testing.T) {
	for _, tc := range []struct {
		sweep []string
		want  []string
	}{
		{[]string{"1.1", "2", "3"}, []string{"small/grpc/b1/c1", "small/grpc/b1/c1/http-version-3"}},
		{[]string{"3", "2", "1.1"}, []string{"small/grpc/b1/c1/http-version-3", "small/grpc/b1/c1"}},
		{[]string{"2"}, []string{"small/grpc/b1/c1"}},
		{[]string{"3"}, []string{"small/grpc/b1/c1/http-version-3"}},
	} {
		cfg := Config{
			Target: target.One("x"), Protocols: []api.Protocol{api.RESTProtobuf, api.GRPC}, Scenarios: []api.Scenario{api.Small},
			Batches: []int{1}, Concurrency: []int{1}, Sweeps: map[string][]string{"http_version": tc.sweep},
		}
		var got []string
		rest := 0
		for _, k := range cfg.Cells() {
			if k.Protocol == api.GRPC {
				got = append(got, k.Key())
			} else {
				rest++
			}
		}
		if !slices.Equal(got, tc.want) || rest != len(tc.sweep) {
			t.Errorf("--http-version %v: gRPC cells %q (want %q), %d REST+protobuf cells", tc.sweep, got, tc.want, rest)
		}
	}
}

// A cell's engine is picked in one place: the endpoint engine for a run of
// the user's endpoints, whatever the condition says, else the condition's
// (standard when it names none); an engine the registry lacks is an
// error, and the endpoint engine is no --engine value.
func TestEngineOf(t *testing.T) {
	ep := Config{Endpoints: endpointcall.Single(nil, nil)}
	for _, tc := range []struct {
		cfg  Config
		name string
		want string
	}{
		{Config{}, "", lean.Standard},
		{Config{}, lean.Lean, lean.Lean},
		{ep, "", EndpointEngine},
		{Config{}, "nope", ""},
	} {
		e, err := EngineOf(tc.cfg, results.CellKey{Condition: results.Condition{Engine: tc.name}})
		if e.name != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("EngineOf(endpoints %v, %q) = %q, %v; want %q", tc.cfg.Endpoints != nil, tc.name, e.name, err, tc.want)
		}
	}
	if slices.Contains(Engines(), EndpointEngine) {
		t.Errorf("Engines() = %v: the endpoint engine is picked by --endpoints, not named", Engines())
	}
	if _, ok := EngineSupports(EndpointEngine); ok {
		t.Error("EngineSupports(endpoint): ok")
	}
}

// Each engine's entry is what refuses a plan it cannot measure (protocol
// x HTTP version x payload x compression x records), and Validate asks
// it: the engines a plan names, standard when it names none, and the
// endpoint engine for a run of the user's endpoints.
func TestEngineRefuse(t *testing.T) {
	rest, err := endpointcall.ParseREST("http://127.0.0.1:1/x", "GET", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	eps := endpointcall.Single(rest, nil)
	p := &payload.Payload{Name: "sample.json"}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "": accepted
	}{
		{"standard: gzip", Config{Compress: []string{CompressGzip}}, ""},
		{"lean: gzip", Config{Engines: []string{lean.Lean}, Compress: []string{CompressGzip}}, "engine lean: no compression (--compress gzip)"},
		{"standard: payload over grpc", Config{Protocols: []api.Protocol{api.GRPC}, Payload: p}, ""},
		{"lean: payload over rest", Config{Engines: []string{lean.Lean}, Protocols: []api.Protocol{api.REST}, Payload: p}, ""},
		{"no engine named: payload over connect", Config{Protocols: []api.Protocol{api.REST, api.Connect}, Payload: p}, "engine standard: payload sample.json not carried over connect (--payload, --proto)"},
		{"lean: payload over grpc-web", Config{Engines: []string{lean.Lean}, Protocols: []api.Protocol{api.GRPCWeb}, Payload: p}, "engine lean: payload sample.json not carried over grpc-web"},
		{"standard: HTTP/2", Config{Sweeps: map[string][]string{"http_version": {"1.1", "2"}}}, ""},
		{"standard: gRPC at HTTP/3", Config{Protocols: []api.Protocol{api.REST, api.GRPC}, Scenarios: []api.Scenario{api.Small, api.Stream, api.Post}, Sweeps: map[string][]string{"http_version": {"2", "3"}}}, ""},
		{"standard: payload over gRPC at HTTP/3", Config{Protocols: []api.Protocol{api.GRPC}, Payload: p, Sweeps: map[string][]string{"http_version": {"3"}}}, "engine standard: payload sample.json not carried over gRPC at HTTP/3 (--payload, --http-version 3)"},
		{"standard: chat over gRPC at HTTP/3", Config{Protocols: []api.Protocol{api.GRPC}, Scenarios: []api.Scenario{api.Chat}, Sweeps: map[string][]string{"http_version": {"1.1", "3"}}}, "engine standard: no chat over gRPC at HTTP/3 (--scenario, --http-version 3)"},
		{"lean: HTTP/3", Config{Engines: []string{lean.Lean}, Sweeps: map[string][]string{"http_version": {"3"}}}, "engine lean: no HTTP/3 (--http-version 3)"},
		{"endpoints: HTTP/1.1", Config{Endpoints: eps, Sweeps: map[string][]string{"http_version": {"1.1"}}}, ""},
		{"endpoints: HTTP/2", Config{Endpoints: eps, Sweeps: map[string][]string{"http_version": {"2"}}}, "http-version: your endpoints (--endpoints, --rest-url) are called over HTTP/1.1 only"},
		{"endpoints: records", Config{Endpoints: eps, Records: []int{10}}, "--records sizes the contract's answers"},
		{"endpoints: gzip", Config{Endpoints: eps, Compress: []string{CompressNone, CompressGzip}}, "--compress gzip asks the contract's server"},
		{"endpoints with lean", Config{Endpoints: eps, Engines: []string{lean.Lean}}, "engine lean: no endpoints of your own (--endpoints)"},
	} {
		c := tc.cfg
		c.Target = target.One("127.0.0.1:1")
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: Validate() = %v, want it accepted", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}
