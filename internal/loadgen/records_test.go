package loadgen_test

import (
	"slices"
	"testing"

	"github.com/meteorbench/meteorbench/api"

	"github.com/meteorbench/meteorbench/internal/loadgen"
	"github.com/meteorbench/meteorbench/internal/loadgen/loadgentest"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// --records sweeps the payload size against the real server: every
// payload scenario gets one cell per size, small exactly one, every answer
// validated against its size, and the bytes per call grow with it.
func TestRunRecordsAgainstRealServer(t *testing.T) {
	// 2500 records uploaded as JSON are about 550 KB: far below the
	// server's default 8 MiB body limit.
	addr := servertest.Start(t, server.Config{})
	cfg := quick(addr)
	cfg.Records = []int{1, 10, 2500}
	before := serverCounts(t, addr)
	res := run(t, cfg)
	after := serverCounts(t, addr)

	if !slices.Equal(res.Settings.Records, cfg.Records) {
		t.Errorf("settings records %v, want %v", res.Settings.Records, cfg.Records)
	}
	want := len(api.Protocols()) * (1 + 3*len(cfg.Records)) // small once, the rest per size
	if len(res.Cells) != want {
		t.Fatalf("%d cells, want %d", len(res.Cells), want)
	}
	type side struct {
		sc api.Scenario
		p  api.Protocol
	}
	bytesBy := map[side][]results.Bytes{}
	for _, c := range res.Cells {
		if c.Errors != 0 || c.Calls != 6 {
			t.Errorf("%s: calls %d, errors %d %v %v; want 6, 0", c.Key(), c.Calls, c.Errors, c.ErrorClasses, c.ErrorExamples)
		}
		switch {
		case c.Scenario == api.Small && c.Records != 0:
			t.Errorf("%s: small measured with %d records; it has no payload", c.Key(), c.Records)
		case c.Scenario != api.Small && !slices.Contains(cfg.Records, c.Records):
			t.Errorf("%s: records %d, want one of %v", c.Key(), c.Records, cfg.Records)
		}
		bytesBy[side{c.Scenario, c.Protocol}] = append(bytesBy[side{c.Scenario, c.Protocol}], c.BytesPerCall)
	}
	for s, bs := range bytesBy {
		if s.sc == api.Small {
			continue
		}
		for i := 1; i < len(bs); i++ { // cells come in plan order: 1, 10, 2500
			grew := bs[i].Received > bs[i-1].Received
			if s.sc == api.Post {
				grew = bs[i].Sent > bs[i-1].Sent
			}
			if !grew {
				t.Errorf("%s/%s: bytes per call %+v did not grow with the records", s.sc, s.p, bs)
			}
		}
	}
	for _, p := range api.Protocols() {
		for _, sc := range []api.Scenario{api.Large, api.Stream, api.Post} {
			key := string(p) + "/" + sc.Method()
			if served := after[key] - before[key]; served != 18 {
				t.Errorf("server counted %v %s calls, want 18 (6 per size)", served, key)
			}
		}
	}
}

// An answer of the wrong size is an invalid response: the test server
// ignores the size asked for and answers its 1000 records.
func TestRunRecordsWrongCount(t *testing.T) {
	srv := loadgentest.Start(t, loadgentest.Config{})
	cfg := quick(srv.Addr)
	cfg.Scenarios = []api.Scenario{api.Large, api.Stream}
	cfg.Records = []int{10}
	res := run(t, cfg)
	if len(res.Cells) != 6 {
		t.Fatalf("%d cells, want 6", len(res.Cells))
	}
	for _, c := range res.Cells {
		if c.Records != 10 || c.Calls != 0 || c.ErrorClasses["invalid-response"] != 6 {
			t.Errorf("%s: records %d, %d successes, errors %v; want 10, 0 and 6 invalid-response", c.Key(), c.Records, c.Calls, c.ErrorClasses)
		}
		wantMsg := "1000 records, want 10"
		if c.Scenario == api.Stream {
			wantMsg = "more than 10 records"
		}
		if got := c.ErrorExamples["invalid-response"]; got != wantMsg {
			t.Errorf("%s: example %q, want %q", c.Key(), got, wantMsg)
		}
	}
}

func TestConfigRecords(t *testing.T) {
	for _, bad := range [][]int{{0}, {-1}, {api.MaxRecords + 1}, {10, 10}} {
		cfg := loadgen.Config{Target: "127.0.0.1:1", Records: bad}
		if err := cfg.Validate(); err == nil {
			t.Errorf("records %v: no error", bad)
		}
	}
	cfg := loadgen.Config{Target: "127.0.0.1:1", Records: []int{1, api.MaxRecords}}
	if err := cfg.Validate(); err != nil {
		t.Errorf("records %v: %v", cfg.Records, err)
	}
}
