package analysis_test

import (
	"math"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/results"
)

// decomposeCell is a large cell at HTTP version v ("" for 1.1) with five
// repeats around p50 and a server CPU per call.
func decomposeCell(p api.Protocol, v string, p50, cpu float64) results.Cell {
	c := repeated(p, 5, func(i int) float64 { return p50 * (1 + 0.01*float64(i)) })
	c.Scenario = api.Large
	c.HTTPVersion = v
	c.ServerCPUUSPerCall = &cpu
	for i := range c.Repeats {
		c.Repeats[i][results.FigServerCPU] = cpu * (1 + 0.01*float64(i))
	}
	return c
}

// REST→gRPC as encoding × transport × framing: three steps whose ratios
// multiply to the whole, on the HTTP/1.1 verdict only, with the browser's
// protocols against gRPC; and no decomposition without HTTP/2's cells.
func TestDecomposition(t *testing.T) {
	cells := []results.Cell{
		decomposeCell(api.REST, "", 10000, 800),
		decomposeCell(api.RESTProtobuf, "", 2500, 300),
		decomposeCell(api.GRPC, "", 2000, 200),
		decomposeCell(api.GRPCWeb, "", 3000, 330),
		decomposeCell(api.REST, "2", 9000, 700),
		decomposeCell(api.RESTProtobuf, "2", 2200, 250),
		decomposeCell(api.GRPCWeb, "2", 2400, 260),
		decomposeCell(api.Connect, "2", 2300, 240),
	}
	vs := analysis.Verdicts(result(cells...))
	var dec *results.Decomposition
	for _, v := range vs {
		switch {
		case v.Condition.HTTPVersion == "" && v.Decomposition == nil:
			t.Fatalf("verdict %q: no decomposition", v.Summary)
		case v.Condition.HTTPVersion == "2" && v.Decomposition != nil:
			t.Errorf("verdict at HTTP/2 decomposed: %q", v.Decomposition.Line)
		case v.Condition.HTTPVersion == "":
			dec = v.Decomposition
			if len(v.Notes) == 0 || v.Notes[0] != dec.Line {
				t.Errorf("notes %q: want the line first", v.Notes)
			}
		}
	}
	if len(dec.Steps) != 3 {
		t.Fatalf("steps %+v: want encoding, transport, framing", dec.Steps)
	}
	want := map[results.Figure][3]float64{
		results.FigLatencyP50: {2500.0 / 10000, 2200.0 / 2500, 2000.0 / 2200},
		results.FigServerCPU:  {300.0 / 800, 250.0 / 300, 200.0 / 250},
	}
	for f, w := range want {
		product := 1.0
		for i, st := range dec.Steps {
			r := stepRatio(t, st, f)
			if math.Abs(r.Ratio-w[i]) > 1e-9 {
				t.Errorf("%s %s: %v, want %v", st.Name, f, r.Ratio, w[i])
			}
			if r.Lo == nil || r.Hi == nil {
				t.Errorf("%s %s: no interval", st.Name, f)
			}
			product *= r.Ratio
		}
		if whole := stepRatio(t, dec.Whole, f).Ratio; math.Abs(product-whole) > 1e-9*whole {
			t.Errorf("%s: steps multiply to %v, the whole is %v", f, product, whole)
		}
	}
	var browser []string
	for _, st := range dec.Browser {
		browser = append(browser, st.To)
	}
	if got := strings.Join(browser, ","); got != "gRPC-Web/2,gRPC-Web/1.1,Connect/2" {
		t.Errorf("browser sides %s", got)
	}
	for _, part := range []string{"large: REST→gRPC 5.0x", "= encoding (JSON→protobuf, HTTP/1.1) 4.0x", "× transport (HTTP/1.1→2, protobuf) 1.14x", "× framing (REST+protobuf/2→gRPC) 1.10x", "less server CPU", "the steps multiply to the whole", "gRPC-Web/2 1.20x", "Connect/2 1.15x"} {
		if !strings.Contains(dec.Line, part) {
			t.Errorf("line %q: no %q", dec.Line, part)
		}
	}

	// Without REST+protobuf at HTTP/2: no decomposition.
	for _, v := range analysis.Verdicts(result(cells[:4]...)) {
		if v.Decomposition != nil {
			t.Errorf("decomposed without HTTP/2 cells: %q", v.Decomposition.Line)
		}
	}
}

func stepRatio(t *testing.T, st results.Step, f results.Figure) results.Ratio {
	t.Helper()
	for _, r := range st.Ratios {
		if r.Figure == f {
			return r
		}
	}
	t.Fatalf("step %s: no %s", st.Name, f)
	return results.Ratio{}
}

// With HTTP/3's cells the transport splits again: one decomposition (the
// HTTP/2 one, steps unchanged) and one line from HTTP/1.1 to 2 to 3, with
// gRPC's step from 2 to 3 when gRPC was measured at HTTP/3 (connect-go's
// gRPC), and the HTTP/3 verdict against that gRPC, not grpc-go's.
func TestDecompositionHTTP3(t *testing.T) {
	for _, grpc3 := range []bool{false, true} {
		t.Run(map[bool]string{false: "grpc-at-2", true: "grpc-at-3"}[grpc3], func(t *testing.T) { decompositionHTTP3(t, grpc3) })
	}
}

func decompositionHTTP3(t *testing.T, grpc3 bool) {
	var cells []results.Cell
	for _, v := range []string{"", "2", "3"} { // REST, REST+protobuf at p50, CPU
		for p, fig := range map[api.Protocol][2][2]float64{
			api.REST: {{10000, 800}, {9000, 700}}, api.RESTProtobuf: {{2500, 300}, {2200, 250}},
		} {
			p50, cpu := fig[0][0], fig[0][1]
			switch v {
			case "2":
				p50, cpu = fig[1][0], fig[1][1]
			case "3":
				p50, cpu = fig[1][0]*8/9, fig[1][1]*9/7
			}
			cells = append(cells, decomposeCell(p, v, p50, cpu))
		}
	}
	cells = append(cells, decomposeCell(api.GRPC, "", 2000, 200))
	if grpc3 {
		cells = append(cells, decomposeCell(api.GRPC, "3", 2400, 260))
	}
	vs := analysis.Verdicts(result(cells...))
	var h1, h3 *results.Verdict
	for i := range vs {
		switch vs[i].Condition.HTTPVersion {
		case "":
			h1 = &vs[i]
		case "3":
			h3 = &vs[i]
		}
	}
	if h3 == nil {
		t.Fatalf("no HTTP/3 verdict: %+v", vs)
	}
	// REST/3's p50 is 8000: gRPC's 2400 at HTTP/3, else grpc-go's 2000.
	want := map[bool]float64{false: 0.25, true: 0.3}[grpc3]
	if got := versusRatio(t, h3, api.GRPC, results.FigLatencyP50); math.Abs(got-want) > 0.01 {
		t.Errorf("HTTP/3 verdict: gRPC's p50 against REST's %.3f, want %.3f", got, want)
	}
	if h1 == nil || h1.Decomposition == nil {
		t.Fatalf("no decomposition on the HTTP/1.1 verdict: %+v", vs)
	}
	if got := h1.Decomposition.Steps[1].To; got != "REST+protobuf/2" {
		t.Errorf("transport step to %q, want REST+protobuf/2", got)
	}
	var lines []string
	for _, n := range h1.Notes {
		if strings.Contains(n, "REST→gRPC") || strings.Contains(n, "HTTP/1.1→2→3") {
			lines = append(lines, n)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%d decomposition lines, want 2 (HTTP/2's, then 1.1→2→3): %q", len(lines), lines)
	}
	for _, want := range []string{"large, transport HTTP/1.1→2→3", "REST+protobuf 1.14x faster, then 1.12x faster", "REST 1.11x faster, then 1.12x faster", "server CPU"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("%q: no %q", lines[1], want)
		}
	}
	if got := strings.Contains(lines[1], "gRPC 2→3 1.20x slower (grpc-go, then connect-go)"); got != grpc3 {
		t.Errorf("%q: gRPC's step from 2 to 3 there: %v, want %v", lines[1], got, grpc3)
	}
}

// versusRatio is v's ratio of protocol p against the baseline on f.
func versusRatio(t *testing.T, v *results.Verdict, p api.Protocol, f results.Figure) float64 {
	t.Helper()
	for _, vs := range v.Versus {
		for _, r := range vs.Ratios {
			if vs.Protocol == p && r.Figure == f {
				return r.Ratio
			}
		}
	}
	t.Fatalf("verdict %s: no %s ratio of %s", v.Summary, f, p)
	return 0
}

// With --http-version 2,3 and no 1.1, gRPC (always HTTP/2, grpc-go) is
// the one protocol measured at the default condition, and REST at HTTP/2
// and HTTP/3: the default verdict says that gRPC is compared on the HTTP/2
// line, which borrows its cells, not that the others failed. A REST cell
// at the default with no successful call is still said to have failed.
func TestVerdictOfALenderAlone(t *testing.T) {
	cells := []results.Cell{
		decomposeCell(api.GRPC, "", 2000, 200),
		decomposeCell(api.REST, "2", 9000, 700),
		decomposeCell(api.RESTProtobuf, "2", 2200, 250),
		decomposeCell(api.REST, "3", 9500, 750),
		decomposeCell(api.GRPC, "3", 2600, 320),
	}
	vs := analysis.Verdicts(result(cells...))
	seen := map[string]bool{}
	for _, v := range vs {
		seen[v.Condition.HTTPVersion] = true
		switch v.Condition.HTTPVersion {
		case "":
			if !strings.Contains(v.Summary, "only gRPC was measured at this condition") || !strings.Contains(v.Summary, "at http 2, below") || strings.Contains(v.Summary, "had successful calls") {
				t.Errorf("default verdict %q: want gRPC alone, compared at http 2", v.Summary)
			}
			if len(v.Versus) != 0 {
				t.Errorf("default verdict compares %+v: there is nothing to compare with", v.Versus)
			}
		case "2":
			if len(v.Versus) == 0 || !strings.Contains(v.Summary, "gRPC") {
				t.Errorf("HTTP/2 verdict %q: want gRPC's cells borrowed and compared", v.Summary)
			}
		}
	}
	if !seen[""] || !seen["2"] || !seen["3"] {
		t.Fatalf("verdicts at %v: want the default, http 2 and http 3", seen)
	}

	failed := decomposeCell(api.REST, "", 10000, 800)
	failed.Calls = 0
	vs = analysis.Verdicts(result(failed, decomposeCell(api.GRPC, "", 2000, 200), decomposeCell(api.REST, "2", 9000, 700)))
	for _, v := range vs {
		if v.Condition.HTTPVersion == "" && !strings.Contains(v.Summary, "only gRPC had successful calls") {
			t.Errorf("default verdict %q: REST failed there, want it said", v.Summary)
		}
	}
}
