package endpointcall

// The endpoints file (run --endpoints FILE): named pairs of a REST request
// and the gRPC call that answers the same question, in YAML or JSON.
//
//	schema: api/meteor.proto          # optional: else --schema, else reflection
//	pairs:
//	  - name: version                 # the pair's scenario name (--mix version=100,...)
//	    rate: 100                     # optional: its calls/s in the traffic
//	    rest:
//	      method: GET                 # default GET, or POST with a body
//	      url: http://127.0.0.1:8080/api/MeteoriteLandings
//	      body: body.json             # a file, relative to this one
//	      headers: {X-Api-Key: k}
//	    grpc:
//	      address: 127.0.0.1:8080
//	      method: MeteoriteLandingsService.MeteoriteLandingsService/GetVersion
//	      schema: other.proto         # optional, this pair's own
//	      request: {}                 # inline protobuf JSON, or request_file
//	      metadata: {x-api-key: k}
//
// Every error is one line naming the flag, the file and the JSON path of
// the value at fault ("--endpoints e.yaml: $.pairs[1].grpc.method: ...").

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"sigs.k8s.io/yaml"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/payload"
	"github.com/meteorbench/meteorbench/internal/results"
)

// fileDoc is the endpoints file.
type fileDoc struct {
	Schema string     `json:"schema"`
	Pairs  []filePair `json:"pairs"`
}

type filePair struct {
	Name string    `json:"name"`
	Rate *float64  `json:"rate"`
	REST *fileREST `json:"rest"`
	GRPC *fileGRPC `json:"grpc"`
}

type fileREST struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Body    string            `json:"body"`
	Headers map[string]string `json:"headers"`
}

type fileGRPC struct {
	Address     string            `json:"address"`
	Method      string            `json:"method"`
	Schema      string            `json:"schema"`
	Request     jsontext.Value    `json:"request"`
	RequestFile string            `json:"request_file"`
	Metadata    map[string]string `json:"metadata"`
}

// FileSpec is run's --endpoints and what applies to every pair of it.
type FileSpec struct {
	Path    string   // --endpoints FILE
	Schema  string   // --schema: the pairs' .proto unless the file names one
	Headers []string // --header: every pair's, REST headers and gRPC metadata
}

// File is an endpoints file read and checked (ReadFile), its gRPC methods
// not yet loaded (Load).
type File struct {
	e     *Endpoints
	grpcs []GRPCSpec
}

// Target is the address the run records as its target: the first pair's
// REST endpoint's.
func (f *File) Target() string { return f.e.Pairs[0].REST.URL.Host }

// HTTPS reports whether any pair's REST URL is https, and whether all are.
func (f *File) HTTPS() (any, all bool) {
	all = true
	for _, p := range f.e.Pairs {
		https := p.REST.URL.Scheme == "https"
		any, all = any || https, all && https
	}
	return any, all
}

// Load loads every pair's gRPC method (its schema, or its server's
// reflection, with the run's TLS and token) and request: the endpoints.
func (f *File) Load(ctx context.Context, tc *tls.Config, token string) (*Endpoints, error) {
	for i, gs := range f.grpcs {
		gs.TLS, gs.Token = tc, token
		p := f.e.Pairs[i]
		g, err := LoadGRPC(ctx, gs)
		if err != nil {
			return nil, err
		}
		p.GRPC = g
		p.REST.Answer = g.Output()
		if p.REST.Answer == nil {
			p.REST.NoSchema = "the gRPC output type has no compiled codec (" + g.dynamic + ")"
		}
	}
	return f.e, nil
}

// pairName is what a pair's name may be: a --mix part's name.
var pairName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// ReadFile reads an endpoints file and checks every pair, its REST
// request read (its body file too): no call made. Every fault is one line
// naming the flag, the file and the JSON path; File.Load then loads the
// gRPC methods.
func ReadFile(s FileSpec) (*File, error) {
	fail := func(path, format string, args ...any) error {
		return fmt.Errorf("--endpoints %s: %s: %s", s.Path, path, fmt.Sprintf(format, args...))
	}
	raw, err := os.ReadFile(s.Path)
	if err != nil {
		return nil, fmt.Errorf("--endpoints: %w", err)
	}
	if ext := strings.ToLower(filepath.Ext(s.Path)); ext != ".json" {
		if raw, err = yaml.YAMLToJSONStrict(raw); err != nil {
			return nil, fail("$", "not YAML: %s", oneLine(err.Error()))
		}
	}
	var doc fileDoc
	if err := json.Unmarshal(raw, &doc, json.RejectUnknownMembers(true)); err != nil {
		return nil, fail(jsonPath(err), "%s", decodeError(err))
	}
	if len(doc.Pairs) == 0 {
		return nil, fail("$.pairs", "no pair: give at least one (name, rest, grpc)")
	}
	dir := filepath.Dir(s.Path)
	rel := func(f string) string {
		if f == "" || filepath.IsAbs(f) {
			return f
		}
		return filepath.Join(dir, f)
	}
	flagMD, err := Metadata(s.Headers)
	if err != nil {
		return nil, fmt.Errorf("--header %w", err)
	}
	e := &Endpoints{File: filepath.Base(s.Path)}
	f := &File{e: e}
	rates := 0
	for i, fp := range doc.Pairs {
		at := fmt.Sprintf("$.pairs[%d]", i)
		switch {
		case fp.Name == "":
			return nil, fail(at+".name", "missing: every pair has a name")
		case !pairName.MatchString(fp.Name):
			return nil, fail(at+".name", "%q: want letters, digits, '_', '.' or '-'", fp.Name)
		case slices.Contains(api.Scenarios(), api.Scenario(fp.Name)) || api.Scenario(fp.Name) == results.MixScenario:
			return nil, fail(at+".name", "%q is a scenario of meteorbench's own contract: name the pair otherwise", fp.Name)
		case fp.REST == nil || fp.GRPC == nil:
			return nil, fail(at, "a pair is a REST request (rest) and a gRPC call (grpc): give both")
		case fp.Rate != nil && !(*fp.Rate > 0):
			return nil, fail(at+".rate", "%v: want calls/s above 0", *fp.Rate)
		}
		if j := slices.IndexFunc(doc.Pairs[:i], func(o filePair) bool { return o.Name == fp.Name }); j >= 0 {
			return nil, fail(at+".name", "%q is pairs[%d]'s name too: every pair's name is its own", fp.Name, j)
		}
		p := &Pair{Name: api.Scenario(fp.Name)}
		if fp.Rate != nil {
			p.Rate = *fp.Rate
			rates++
		}
		headers := slices.Clone(s.Headers)
		for _, k := range sortedKeys(fp.REST.Headers) {
			headers = append(headers, k+": "+fp.REST.Headers[k])
		}
		p.REST, err = RESTSpec{URL: fp.REST.URL, Method: fp.REST.Method, Body: rel(fp.REST.Body), Headers: headers,
			At: func(field string) string {
				if field == "header" {
					return "--endpoints " + s.Path + ": " + at + ".rest.headers"
				}
				return "--endpoints " + s.Path + ": " + at + ".rest." + field
			}}.Parse()
		if err != nil {
			return nil, err
		}
		gs := GRPCSpec{Addr: fp.GRPC.Address, Method: fp.GRPC.Method, Schema: rel(fp.GRPC.Schema), Request: rel(fp.GRPC.RequestFile),
			At: func(field string) string {
				f := map[string]string{"addr": "address", "request": "request"}[field]
				if f == "" {
					f = field
				}
				if field == "request" && fp.GRPC.RequestFile != "" {
					f = "request_file"
				}
				if field == "schema" && fp.GRPC.Schema == "" {
					if doc.Schema != "" {
						return "--endpoints " + s.Path + ": $.schema"
					}
					return "--schema"
				}
				return "--endpoints " + s.Path + ": " + at + ".grpc." + f
			}}
		if gs.Schema == "" {
			gs.Schema = rel(doc.Schema)
		}
		if gs.Schema == "" {
			gs.Schema = s.Schema
		}
		switch {
		case fp.GRPC.Request != nil && fp.GRPC.RequestFile != "":
			return nil, fail(at+".grpc", "request and request_file are exclusive: give one")
		case fp.GRPC.Request != nil:
			gs.RequestJSON = fp.GRPC.Request
		}
		md := flagMD.Copy()
		for _, k := range sortedKeys(fp.GRPC.Metadata) {
			key := strings.ToLower(k)
			if _, _, err := ParseHeader(k + ": v"); err != nil || transportHeader(key) {
				return nil, fail(at+".grpc.metadata", "%q: not a metadata key a call may set", k)
			}
			md.Append(key, fp.GRPC.Metadata[k])
		}
		if len(md) > 0 {
			gs.Metadata = md
		}
		e.Pairs = append(e.Pairs, p)
		f.grpcs = append(f.grpcs, gs)
	}
	if rates > 0 && rates < len(e.Pairs) {
		i := slices.IndexFunc(e.Pairs, func(p *Pair) bool { return p.Rate == 0 })
		return nil, fail(fmt.Sprintf("$.pairs[%d].rate", i), "missing: give every pair a rate (the traffic), or none")
	}
	return f, nil
}

// Traffic is the file's traffic: every pair at its rate; nil when the
// file gives none.
func (e *Endpoints) Traffic() results.Mix {
	var m results.Mix
	for _, p := range e.Pairs {
		if p.Rate == 0 {
			return nil
		}
		m = append(m, results.MixPart{Scenario: p.Name, Rate: p.Rate})
	}
	return m
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonPath is the JSON path ("$.pairs[1].grpc") of a decoding error's
// value: the JSON pointer it carries, in the path syntax people read.
func jsonPath(err error) string {
	var p jsontext.Pointer
	var se *json.SemanticError
	var sx *jsontext.SyntacticError
	switch {
	case errors.As(err, &se):
		p = se.JSONPointer
	case errors.As(err, &sx):
		p = sx.JSONPointer
	}
	var b bytes.Buffer
	b.WriteString("$")
	for tok := range p.Tokens() {
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
		} else {
			b.WriteString("." + tok)
		}
	}
	return b.String()
}

// decodeError says what was wrong with the value at the error's path.
func decodeError(err error) string {
	var se *json.SemanticError
	if errors.As(err, &se) {
		switch {
		case errors.Is(se.Err, json.ErrUnknownName):
			return "unknown field (a pair has name, rate, rest {method, url, body, headers} and grpc {address, method, schema, request, request_file, metadata})"
		case se.GoType != nil && se.JSONKind != 0:
			return fmt.Sprintf("%s where %s is wanted", payload.JSONKind(byte(se.JSONKind)), goKindName(se.GoType.String()))
		}
	}
	var sx *jsontext.SyntacticError
	if errors.As(err, &sx) {
		return oneLine(sx.Err.Error())
	}
	return oneLine(err.Error())
}

func goKindName(t string) string {
	switch {
	case strings.HasPrefix(t, "map["), strings.HasPrefix(t, "*endpointcall."), strings.HasPrefix(t, "endpointcall."):
		return "an object"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case t == "string":
		return "a string"
	}
	return "a number"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
