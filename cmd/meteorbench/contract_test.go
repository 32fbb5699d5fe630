package main

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/tlsutil"
)

// startPythonContractServer starts testdata/contract_server.py, a server
// of part of the contract written apart from meteorbench (REST JSON: small,
// large and post; no stream, protobuf, gRPC, records, metrics or health),
// and returns its address. The test is skipped where python3 is missing.
func startPythonContractServer(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: the contract server written in Python cannot run here")
	}
	s := startScript(t, 20*time.Second, exec.Command(py, "testdata/contract_server.py", "../../internal/data/meteorites.json"))
	addr, ok := strings.CutPrefix(s, "listening ")
	if !ok {
		t.Fatalf("contract_server.py printed %q", s)
	}
	return addr
}

// startScript starts cmd, a server written in another language, stopped
// when the test ends, and returns the first line it prints (where it
// listens), trimmed; it fails the test when none comes within wait.
func startScript(t *testing.T, wait time.Duration, cmd *exec.Cmd) string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		return strings.TrimSpace(s)
	case <-time.After(wait):
		t.Fatalf("%s did not start within %v", strings.Join(cmd.Args, " "), wait)
	}
	return ""
}

// check and run against a server written in another language: check says
// what it serves and lacks, run measures the served cells only and marks
// the rest as not served.
func TestCheckAndRunAgainstPythonServer(t *testing.T) {
	addr := startPythonContractServer(t)
	stdout, _, err := execute(t, "check", "--target", addr)
	if err != nil {
		t.Fatalf("check: %v\n%s", err, stdout)
	}
	wantIn(t, "check's table", stdout,
		"serves 3 of 12: small rest, large rest, post rest\n",
		"ignores the records asked for (run --records does not measure these): large rest\n",
		"lacks (optional): metrics, health\n",
		"stream    rest           GET /api/MeteoriteLandings/LargePayload/stream (Accept: application/x-ndjson)    NO: http-404")

	stdout, _, err = execute(t, "check", "--target", addr, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var c results.Contract
	if err := json.Unmarshal([]byte(stdout), &c); err != nil || !c.Serves() || len(c.Optional) != 2 || c.Optional[0].Served {
		t.Fatalf("check --format json: %v %+v", err, c)
	}

	stdout, stderr, err := execute(t, "run", "--target", addr, "--batch", "2", "--duration", "100ms", "--repeat", "1",
		"--warmup", "0", "--format", "json", "--quiet")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	res, err := results.Read(strings.NewReader(stdout))
	if err != nil {
		t.Fatal(err)
	}
	var measured []string
	for _, cell := range res.Cells {
		measured = append(measured, string(cell.Scenario)+" "+string(cell.Protocol))
		if cell.Calls == 0 || cell.Errors != 0 {
			t.Errorf("%s: %d calls, %d errors", cell.Key(), cell.Calls, cell.Errors)
		}
		if cell.ServerCPUUSPerCall != nil {
			t.Errorf("%s: server CPU %v per call from a server without meteorbench's metrics", cell.Key(), *cell.ServerCPUUSPerCall)
		}
	}
	if got := strings.Join(measured, ", "); got != "small rest, large rest, post rest" {
		t.Errorf("measured %s, want the served cells only", got)
	}
	if len(res.NotServed) != 9 {
		t.Errorf("%d not served, want 9: %+v", len(res.NotServed), res.NotServed)
	}
	for _, n := range res.NotServed {
		if n.Why == "" || (n.Scenario == api.Stream && n.Protocol == api.REST && !strings.HasPrefix(n.Why, "http-404")) {
			t.Errorf("not served %+v", n)
		}
	}
	for _, v := range res.Verdicts {
		if !slices.Contains(v.Notes, "REST+protobuf, gRPC not served by the target: not measured") {
			t.Errorf("%s verdict's notes %q: want the protocols not served", v.Scenario, v.Notes)
		}
	}
	// A capacity search leaves them out too.
	stdout, stderr, err = execute(t, "capacity", "--target", addr, "--scenario", "small", "--proto", "rest,grpc",
		"--probe", "200ms", "--probe-warmup", "0", "--max-time", "1s", "--format", "json", "--quiet")
	if err != nil {
		t.Fatalf("capacity: %v\n%s", err, stderr)
	}
	if res, err = results.Read(strings.NewReader(stdout)); err != nil {
		t.Fatal(err)
	}
	if len(res.NotServed) != 1 || res.NotServed[0].Protocol != api.GRPC || len(res.Capacity) != 1 || res.Capacity[0].Protocol != api.REST {
		t.Errorf("capacity: not served %+v, searched %d series", res.NotServed, len(res.Capacity))
	}
	// The reporters show them.
	stdout, _, err = execute(t, "run", "--target", addr, "--scenario", "stream,small", "--proto", "rest", "--batch", "1",
		"--iterations", "1", "--warmup", "0", "--format", "markdown", "--quiet")
	if err != nil || !strings.Contains(stdout, "**not served**: stream rest: not measured (http-404") {
		t.Errorf("markdown: %v\n%s", err, stdout)
	}
}

// A server that serves nothing of the contract: check exits 1, run refuses
// it; a bad target is a usage error.
func TestCheckServesNothing(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	stdout, _, err := execute(t, "check", "--target", addr)
	if code := exitCodeQuiet(err); code != 1 || !strings.Contains(stdout, "serves 0 of 12: nothing") {
		t.Errorf("exit %d (%v)\n%s", code, err, stdout)
	}
	if _, _, err := execute(t, "run", "--target", addr, "--iterations", "1", "--quiet"); exitCodeQuiet(err) != 1 || !strings.Contains(err.Error(), "does not serve the meteorbench contract") {
		t.Errorf("run: %v", err)
	}
	wantUsageError(t, "check", "--target", "nohostport")
	wantUsageError(t, "check", "--target", addr, "--format", "xml")
}

// check --tls against a TLS server: everything served; in plaintext,
// nothing, with a hint.
func TestCheckTLS(t *testing.T) {
	cert, pemBytes, err := tlsutil.SelfSigned("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr := servertest.Start(t, server.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	ca := writeTemp(t, "ca.pem", string(pemBytes))
	stdout, _, err := execute(t, "check", "--target", addr, "--tls", "--tls-ca", ca)
	if err != nil || !strings.Contains(stdout, "serves 12 of 12") {
		t.Errorf("check --tls: %v\n%s", err, stdout)
	}
	// ALPN h2 for REST and the web protocols at HTTP/2.
	stdout, _, err = execute(t, "check", "--target", addr, "--tls", "--tls-ca", ca, "--proto", "all", "--http-version", "1.1,2")
	if err != nil || !strings.Contains(stdout, "serves 36 of 36") {
		t.Errorf("check --tls --proto all --http-version 1.1,2: %v\n%s", err, stdout)
	}
	_, _, err = execute(t, "check", "--target", addr)
	if exitCodeQuiet(err) != 1 || !strings.Contains(err.Error(), "a TLS server needs --tls") {
		t.Errorf("check in plaintext: %v", err)
	}
	wantUsageError(t, "check", "--target", addr, "--tls", "both")

	// Each protocol at its own address, over TLS: gRPC's health over TLS
	// (ALPN h2) too.
	stdout, _, err = execute(t, "check", "--target", "rest="+addr+",grpc="+addr, "--tls", "--tls-ca", ca)
	if err != nil || !strings.Contains(stdout, "serves 12 of 12") {
		t.Errorf("check --tls, two keys: %v\n%s", err, stdout)
	}
	stdout, _, err = execute(t, "check", "--target", "grpc="+addr, "--tls", "--tls-ca", ca)
	if err != nil || !strings.Contains(stdout, "serves 4 of 4") || strings.Contains(stdout, "Unimplemented") {
		t.Errorf("check --tls, grpc= alone: %v\n%s", err, stdout)
	}
}

// A target that refuses every probe call for its credentials is not one
// that serves nothing: the error names --token.
func TestRunRefusedCredentials(t *testing.T) {
	addr := servertest.Start(t, server.Config{Token: "s3cret"})
	_, _, err := execute(t, "run", "--target", addr, "--scenario", "small", "--iterations", "1", "--quiet")
	if exitCodeQuiet(err) != 1 || !strings.Contains(err.Error(), "refused every probe call for its credentials") || !strings.Contains(err.Error(), "check --token") {
		t.Errorf("run without the token: %v", err)
	}
}

// checkAll runs check --proto all --http-version 1.1,2 --format json
// against addr, which must serve something, and returns what it printed,
// decoded too.
func checkAll(t *testing.T, addr string) (string, results.Contract) {
	t.Helper()
	stdout, _, err := execute(t, "check", "--target", addr, "--proto", "all", "--http-version", "1.1,2", "--format", "json")
	if err != nil {
		t.Fatalf("check: %v\n%s", err, stdout)
	}
	var c results.Contract
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatal(err)
	}
	return stdout, c
}

// check asks what run --proto all --http-version 1.1,2 measures: the own
// server serves every call of the five protocols, the REST and web ones at
// both HTTP versions and gRPC once, each call's version in the JSON
// (http_version, left out for 1.1) and in its request; check refuses what
// run refuses, with run's one line.
func TestCheckWebAndHTTP2(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	stdout, c := checkAll(t, addr)
	var want, got []string
	for _, sc := range api.Scenarios() {
		for _, p := range api.Protocols() {
			for _, v := range []string{"", "2"} {
				if p == api.GRPC && v == "2" {
					continue // always HTTP/2: asked once
				}
				want = append(want, fmt.Sprintf("%s %s %s", sc, p, v))
			}
		}
	}
	records := 0
	for _, k := range c.Calls {
		if !k.Served {
			t.Errorf("%s %s HTTP %q: not served: %s", k.Scenario, k.Protocol, k.HTTPVersion, k.Why)
		}
		if k.Records != 0 {
			records++
			continue
		}
		got = append(got, fmt.Sprintf("%s %s %s", k.Scenario, k.Protocol, k.HTTPVersion))
		mt := map[api.Protocol]string{api.GRPCWeb: "(Content-Type: " + api.TypeGRPCWebProto + ")", api.Connect: "(Content-Type: " + api.TypeConnectProto + ")"}[k.Protocol]
		if k.Protocol == api.Connect && k.Scenario == api.Stream {
			mt = "(Content-Type: " + api.TypeConnectStreamProto + ")"
		}
		if strings.Contains(k.Request, " HTTP/2 ") != (k.HTTPVersion == "2") || !strings.HasSuffix(k.Request, mt) {
			t.Errorf("%s %s HTTP %q: request %q", k.Scenario, k.Protocol, k.HTTPVersion, k.Request)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) || records != 2*9 {
		t.Errorf("calls\n%s\nwant\n%s\nand %d with records, want 18", strings.Join(got, "\n"), strings.Join(want, "\n"), records)
	}
	if n := strings.Count(stdout, `"http_version"`); n != strings.Count(stdout, `"http_version": "2"`) || n != 16+8 {
		t.Errorf("%d http_version fields, want 24, all \"2\"", n)
	}

	stdout, _, err := execute(t, "check", "--target", addr, "--proto", "grpc-web,connect", "--http-version", "2")
	if err != nil {
		t.Fatalf("check: %v\n%s", err, stdout)
	}
	wantIn(t, "check's table", stdout, "serves 8 of 8: small grpc-web over HTTP/2, small connect over HTTP/2, large grpc-web over HTTP/2,",
		"/GetLargePayload HTTP/2 (Content-Type: application/connect+proto, meteorbench-records: 10)")

	for _, args := range [][]string{
		{"--http-version", "4"}, {"--http-version", "2,2"}, {"--proto", "soap"}, {"--proto", ""}, {"--proto", "all,rest"},
		{"--target", "grpc=" + addr, "--proto", "rest"},
	} {
		args = append([]string{"--target", addr}, args...)
		wantUsageError(t, append([]string{"check"}, args...)...)
		_, _, checkErr := execute(t, append([]string{"check"}, args...)...)
		_, _, runErr := execute(t, append([]string{"run", "--iterations", "1"}, args...)...)
		if runErr == nil || checkErr.Error() != runErr.Error() {
			t.Errorf("%q: check says %v, run %v", args, checkErr, runErr)
		}
	}
}

// A server that serves REST over HTTP/1.1 only, written in Python: asked
// for everything, check lists REST over HTTP/2 and the web protocols as
// not served, each with what its call got (at HTTP/2, that the address
// speaks HTTP/1.1 only), and exits 0 for what it serves.
func TestCheckPythonServerWebAndHTTP2(t *testing.T) {
	addr := startPythonContractServer(t)
	_, c := checkAll(t, addr)
	var served []string
	for _, k := range c.Calls {
		if k.Served {
			served = append(served, fmt.Sprintf("%s %s %s %d", k.Scenario, k.Protocol, k.HTTPVersion, k.Records))
		} else if k.Why == "" {
			t.Errorf("%s %s HTTP %q: not served, no reason", k.Scenario, k.Protocol, k.HTTPVersion)
		}
		if v2 := k.HTTPVersion == "2"; v2 != strings.HasSuffix(k.Why, " ("+addr+" speaks HTTP/1.1 only)") {
			t.Errorf("%s %s HTTP %q: %s", k.Scenario, k.Protocol, k.HTTPVersion, k.Why)
		}
	}
	if got := strings.Join(served, ", "); got != "small rest  0, large rest  0, post rest  0" || len(c.Calls) != 36+1 { // large rest's records asked too
		t.Errorf("served %s of %d calls", got, len(c.Calls))
	}
}

// run --http-version 1.1,2 against a REST server that speaks HTTP/1.1
// only: the calls over HTTP/2 are not served, each with the reason and
// its version, and not measured; the ones over HTTP/1.1 are measured.
func TestRunPythonServerHTTP2NotServed(t *testing.T) {
	addr := startPythonContractServer(t)
	res := runJSON(t, "--target", addr, "--scenario", "small", "--proto", "rest", "--http-version", "1.1,2",
		"--iterations", "2", "--batch", "5", "--warmup", "0", "--repeat", "1")
	if len(res.Cells) != 1 || res.Cells[0].HTTPVersion != "" || res.Cells[0].Errors != 0 {
		t.Fatalf("cells %+v: want small rest over HTTP/1.1 only, without errors", res.Cells)
	}
	if len(res.NotServed) != 1 || res.NotServed[0].Name() != "small rest over HTTP/2" ||
		!strings.HasSuffix(res.NotServed[0].Why, " ("+addr+" speaks HTTP/1.1 only)") {
		t.Errorf("not served %+v: want small rest over HTTP/2, the address speaking HTTP/1.1 only", res.NotServed)
	}
}
