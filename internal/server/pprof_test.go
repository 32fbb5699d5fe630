package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/cpubreakdown"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/testmode"
)

// pprofGet asks path of the server at addr, with token when not empty.
func pprofDo(t *testing.T, method, url, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{Timeout: hangGuard}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestPprofOff: without Config.Pprof there is no profiling endpoint.
func TestPprofOff(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	for _, p := range []string{server.PprofPrefix, server.PprofProfilePath + "?seconds=1", server.PprofPrefix + "heap"} {
		if code, _ := pprofDo(t, http.MethodGet, "http://"+addr+p, ""); code != http.StatusNotFound {
			t.Errorf("GET %s without --pprof: status %d, want 404", p, code)
		}
	}
}

// TestPprofCPUProfile: a CPU profile is behind the token, one at a time
// (a second request while one runs gets 429), ends early on POST
// PprofStopPath, and is a profile go tool pprof (and cpubreakdown) reads.
func TestPprofCPUProfile(t *testing.T) {
	const token = "s3cret"
	addr := servertest.Start(t, server.Config{Pprof: true, Token: token})
	base := "http://" + addr
	if code, _ := pprofDo(t, http.MethodGet, base+server.PprofProfilePath+"?seconds=1", ""); code != http.StatusUnauthorized {
		t.Errorf("CPU profile without the token: status %d, want 401", code)
	}
	if code, body := pprofDo(t, http.MethodGet, base+server.PprofProfilePath+"?seconds=0", token); code != http.StatusBadRequest {
		t.Errorf("seconds=0: status %d (%s), want 400", code, body)
	}
	type answer struct {
		code int
		body []byte
	}
	first := make(chan answer, 1)
	start := time.Now()
	go func() {
		code, body := pprofDo(t, http.MethodGet, base+server.PprofProfilePath+"?seconds=15", token)
		first <- answer{code, body}
	}()
	// Wait until the first profile runs (the index says so).
	for deadline := time.Now().Add(hangGuard); ; {
		_, idx := pprofDo(t, http.MethodGet, base+server.PprofPrefix, token)
		if strings.Contains(string(idx), "running now: true") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the CPU profile never started: %s", idx)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, body := pprofDo(t, http.MethodGet, base+server.PprofProfilePath+"?seconds=1", token); code != http.StatusTooManyRequests {
		t.Errorf("a second CPU profile while one runs: status %d (%s), want 429", code, body)
	}
	// Some work for the profile to see.
	n := 200
	if testmode.UnderRace(t, "10 large calls, each several times dearer under the detector") {
		n = 10
	}
	for range n {
		pprofDo(t, http.MethodGet, base+"/api/MeteoriteLandings/LargePayload", token)
	}
	if code, body := pprofDo(t, http.MethodPost, base+server.PprofStopPath, token); code != http.StatusNoContent {
		t.Errorf("POST %s: status %d (%s), want 204", server.PprofStopPath, code, body)
	}
	a := <-first
	if took := time.Since(start); took > 14*time.Second {
		t.Errorf("the stopped profile took %v: it ran its 15 s", took)
	}
	if a.code != http.StatusOK {
		t.Fatalf("CPU profile: status %d (%s)", a.code, a.body)
	}
	p, err := cpubreakdown.Parse(a.body)
	if err != nil {
		t.Fatal(err)
	}
	tally := cpubreakdown.Count(p)
	t.Logf("server profile: %d samples, %v CPU, encode %v", tally.N, tally.Total, tally.CPU[cpubreakdown.Encode])
	if tally.N == 0 || tally.CPU[cpubreakdown.Encode] == 0 {
		t.Errorf("the profile of 200 large REST calls has %d samples, %v of encoding", tally.N, tally.CPU[cpubreakdown.Encode])
	}
	if code, _ := pprofDo(t, http.MethodPost, base+server.PprofStopPath, token); code != http.StatusConflict {
		t.Errorf("POST %s with no profile running: status %d, want 409", server.PprofStopPath, code)
	}
	if code, body := pprofDo(t, http.MethodGet, base+server.PprofPrefix+"heap?debug=1", token); code != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Errorf("heap profile: status %d (%.80s)", code, body)
	}
	if code, _ := pprofDo(t, http.MethodGet, base+server.PprofPrefix+"nosuch", token); code != http.StatusNotFound {
		t.Errorf("an unknown profile: status %d, want 404", code)
	}
}

func TestCheckPprof(t *testing.T) {
	for _, c := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8080", "", true},
		{"[::1]:0", "", true},
		{"localhost:8080", "", true},
		{":8080", "", false},
		{"0.0.0.0:8080", "", false},
		{"192.0.2.1:8080", "", false},
		{":8080", "tok", true},
	} {
		if err := server.CheckPprof(c.addr, c.token); (err == nil) != c.ok {
			t.Errorf("CheckPprof(%q, %q) = %v, want ok %t", c.addr, c.token, err, c.ok)
		}
	}
}
