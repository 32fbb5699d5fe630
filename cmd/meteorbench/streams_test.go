package main

// The streams both ways (issue 42) end to end: run's three stream
// scenarios over every protocol against its own server, and tools nobody
// here wrote against the server's new methods: ghz on the gRPC client and
// bidirectional streams, headless Chromium on the WebSocket chat.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/testmode"
)

// TestRunStreams: run --scenario upload,chat,feed over rest,
// rest-protobuf and grpc (and the rest feed over SSE too) measures every
// cell with calls (messages) and no error, each with its streams' setup
// time, a feed at a rate asked for, and a verdict per scenario and feed
// transport that says it is per message.
func TestRunStreams(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	res := runJSON(t, "--target", addr, "--scenario", "upload,chat,feed", "--proto", "rest,rest-protobuf,grpc", "--messages", "50",
		"--feed-rate", "2000", "--feed-transport", "websocket,sse", "--concurrency", "2", "--duration", "300ms", "--warmup", "50ms", "--repeat", "1")
	cells := map[string]bool{}
	for _, c := range res.Cells {
		cells[string(c.Scenario)+" "+string(c.Protocol)+" "+c.FeedTransport] = true
		if c.Calls == 0 || c.Errors != 0 {
			t.Errorf("%s: %d messages, %d errors %v", c.Key(), c.Calls, c.Errors, c.ErrorExamples)
		}
		if c.StreamSetupUS == nil || c.StreamSetupUS.P50 <= 0 {
			t.Errorf("%s: no stream setup time", c.Key())
		}
		if c.Messages != 50 || (c.Scenario == api.Feed) != (c.FeedRate == 2000) {
			t.Errorf("%s: messages %d, feed rate %v", c.Key(), c.Messages, c.FeedRate)
		}
	}
	for _, sc := range api.StreamScenarios() {
		for _, p := range api.DefaultProtocols() {
			if !cells[string(sc)+" "+string(p)+" "] {
				t.Errorf("no %s %s cell", sc, p)
			}
		}
	}
	if !cells["feed rest sse"] || len(res.Cells) != 10 {
		t.Errorf("%d cells, want 10 with the rest feed over SSE: %v", len(res.Cells), cells)
	}
	verdicts := 0
	for _, v := range res.Verdicts {
		if !v.Scenario.IsStream() {
			continue
		}
		verdicts++
		// A verdict says what it compares, per message (a cell judged
		// suspect on a busy machine gives none: runJSON logged it).
		if !strings.Contains(v.Summary, "no verdict") && (!strings.Contains(v.Summary, "per message") || !strings.Contains(v.Summary, "gRPC")) {
			t.Errorf("verdict %q: not per message", v.Summary)
		}
	}
	if verdicts != len(api.StreamScenarios())+1 { // and the feed over SSE
		t.Errorf("%d stream verdicts, want %d", verdicts, len(api.StreamScenarios())+1)
	}
}

// TestRunWebStreams: run --proto grpc-web,connect --http-version 1.1,2
// measures what the web protocols carry (the feed over both, the upload
// over Connect, the chat over Connect on HTTP/2), every message checked,
// no error, bytes counted per message, and records the rest as not
// served saying why; the verdicts name the stream types.
func TestRunWebStreams(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	res := runJSON(t, "--target", addr, "--scenario", "upload,chat,feed", "--proto", "grpc-web,connect,grpc", "--http-version", "1.1,2",
		"--messages", "50", "--feed-rate", "2000", "--concurrency", "2", "--duration", "300ms", "--warmup", "50ms", "--repeat", "1")
	cells := map[string]bool{}
	for _, c := range res.Cells {
		if c.Protocol == api.GRPC {
			continue
		}
		cells[string(c.Scenario)+" "+string(c.Protocol)+" "+c.HTTPVersion] = true
		if c.Calls == 0 || c.Errors != 0 {
			t.Errorf("%s: %d messages, %d errors %v", c.Key(), c.Calls, c.Errors, c.ErrorExamples)
		}
		if per := c.BytesPerCall.Sent + c.BytesPerCall.Received; per <= 0 || per > 2000 {
			t.Errorf("%s: %.0f bytes a message", c.Key(), per)
		}
		if c.StreamSetupUS == nil || c.StreamSetupUS.P50 <= 0 {
			t.Errorf("%s: no stream setup time", c.Key())
		}
	}
	for _, want := range []string{"feed grpc-web ", "feed grpc-web 2", "feed connect ", "feed connect 2", "upload connect ", "upload connect 2", "chat connect 2"} {
		if !cells[want] {
			t.Errorf("no %s cell (cells %v, not served %v)", want, cells, res.NotServed)
		}
	}
	if len(cells) != 7 {
		t.Errorf("%d web cells, want 7: %v", len(cells), cells)
	}
	not := map[string]bool{}
	for _, n := range res.NotServed {
		not[string(n.Scenario)+" "+string(n.Protocol)+" "+n.HTTPVersion] = true
		if !strings.Contains(n.Why, "not served") {
			t.Errorf("%s not served: %q, want why", n.Name(), n.Why)
		}
	}
	for _, want := range []string{"upload grpc-web ", "upload grpc-web 2", "chat grpc-web ", "chat grpc-web 2", "chat connect "} {
		if !not[want] {
			t.Errorf("%s not listed as not served: %v", want, res.NotServed)
		}
	}
	named := false
	for _, v := range res.Verdicts {
		t.Logf("verdict: %s", v.Summary)
		named = named || strings.Contains(v.Summary, "Connect server stream") || strings.Contains(v.Summary, "gRPC-Web server stream")
	}
	if !named {
		t.Errorf("no verdict names a web protocol's server stream")
	}
}

// TestRunStreamsPythonServer: a server in another language serves the
// stream methods from api/meteor.proto (testdata/pair_server.py, grpcio's
// C-core): run measures upload, chat and feed over gRPC against it, every
// message checked (ids in order, the feed's stamps, the chat's echo), no
// error.
func TestRunStreamsPythonServer(t *testing.T) {
	p := startPair(t)
	res := runJSON(t, "--target", p.target(), "--scenario", "upload,chat,feed", "--proto", "grpc", "--messages", "20",
		"--feed-rate", "1000", "--concurrency", "2", "--duration", "300ms", "--warmup", "50ms", "--repeat", "1")
	if len(res.Cells) != 3 {
		t.Fatalf("%d cells, want 3 (not served: %v)", len(res.Cells), res.NotServed)
	}
	for _, c := range res.Cells {
		if c.Calls == 0 || c.Errors != 0 {
			t.Errorf("%s: %d messages, %d errors %v", c.Key(), c.Calls, c.Errors, c.ErrorExamples)
		}
		t.Logf("%s: %d messages, p50 %.0f µs", c.Key(), c.Calls, c.LatencyUS.P50)
	}
}

// TestCheckStreams: check asks one message of each stream scenario:
// served over rest, rest-protobuf and grpc by meteorbench serve, each with
// its request (the route and transport, or the RPC), and over gRPC-Web
// and Connect where they carry the stream type (HTTP/1.1 here), the rest
// not served, saying why.
func TestCheckStreams(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	stdout, _, err := execute(t, "check", "--target", addr, "--scenario", "upload,chat,feed", "--proto", "all", "--format", "json")
	if err != nil {
		t.Fatalf("check: %v\n%s", err, stdout)
	}
	var c results.Contract
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range c.Calls {
		if !k.Scenario.IsStream() || k.HTTPVersion != "" {
			continue
		}
		n++
		// Over the web protocols at HTTP/1.1: the feed (a server
		// stream) over both, the upload (a client stream) over Connect;
		// gRPC-Web has no client or bidi streams, and Connect's bidi
		// stream needs HTTP/2.
		notServed := (k.Protocol == api.GRPCWeb && k.Scenario != api.Feed) || (k.Protocol == api.Connect && k.Scenario == api.Chat)
		if k.Served == notServed || (notServed && !strings.Contains(k.Why, "not served")) {
			t.Errorf("%s %s: served %v (%s)", k.Scenario, k.Protocol, k.Served, k.Why)
		}
		if !strings.Contains(strings.ToLower(k.Request), string(k.Scenario)) {
			t.Errorf("%s %s: request %q", k.Scenario, k.Protocol, k.Request)
		}
	}
	if n != 3*5 {
		t.Errorf("%d stream calls at HTTP/1.1, want 15", n)
	}
}

// TestRunStreamsRefused: the lean engine over a web protocol, a payload of one's own and bad
// stream settings are refused with one line naming the flag.
func TestRunStreamsRefused(t *testing.T) {
	wantUsageErrors(t, []string{"run", "--target", "127.0.0.1:1", "--scenario", "chat"}, [][]string{
		{"--engine", "lean", "--proto", "grpc-web"}, // lean measures REST and gRPC streams, not the web protocols' (yet)
		{"--messages", "0"},
		{"--feed-rate", "-1"},
	})
}

// TestStreamsGhz: ghz (a gRPC load tool nobody here wrote) drives the
// client stream (UploadStream) and the bidirectional stream (Chat) from
// api/meteor.proto, every call OK.
func TestStreamsGhz(t *testing.T) {
	ghz, err := exec.LookPath("ghz")
	if err != nil {
		t.Skip("ghz not on PATH: go install github.com/bojand/ghz/cmd/ghz@v0.121.0")
	}
	addr := servertest.Start(t, server.Config{})
	for _, tc := range []struct{ method, data string }{
		{"UploadStream", `[{"id": 1, "name": "Aachen"}, {"id": 2, "name": "Aarhus"}, {"id": 6, "name": "Abee"}]`},
		{"Chat", `[{"seq": 1, "text": "hi"}, {"seq": 2, "text": "there"}]`},
		{"Feed", `{"messages": 5, "rate": 1000}`},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, ghz, "--insecure", "--proto", "../../api/meteor.proto",
			"--call", "MeteoriteLandingsService.MeteoriteLandingsService/"+tc.method, "-d", tc.data,
			"-n", "200", "-c", "4", "--format", "json", addr).Output()
		cancel()
		if err != nil {
			t.Fatalf("ghz %s: %v\n%s", tc.method, err, out)
		}
		var rep struct {
			Count        int            `json:"count"`
			StatusCodes  map[string]int `json:"statusCodeDistribution"`
			ErrorDist    map[string]int `json:"errorDistribution"`
			Average, Rps float64
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("ghz %s: %v\n%s", tc.method, err, out)
		}
		if rep.Count != 200 || rep.StatusCodes["OK"] != 200 || len(rep.ErrorDist) > 0 {
			t.Errorf("ghz %s: %d calls, statuses %v, errors %v; want 200 OK", tc.method, rep.Count, rep.StatusCodes, rep.ErrorDist)
		}
		t.Logf("ghz %s: %d calls OK, %.0f calls/s, mean %v", tc.method, rep.Count, rep.Rps, time.Duration(rep.Average))
	}
}

// chatPage is the browser's side of TestChatBrowser: it opens the chat
// WebSocket (the token in the query, as a browser must), sends a JSON
// message, and posts what came back to the page's server.
const chatPage = `<!doctype html><title>chat</title><script>
const ws = new WebSocket("ws://%s%s?%s=%s");
const report = (s) => fetch("/result", {method: "POST", body: s});
ws.onopen = () => ws.send(JSON.stringify({seq: 7, sent_unix_nano: Date.now() * 1e6, text: "from the browser"}));
ws.onmessage = (e) => { report(e.data); ws.close(1000); };
ws.onerror = () => report("error");
ws.onclose = (e) => { if (e.code !== 1000 && e.code !== 1005) report("closed " + e.code + " " + e.reason); };
</script>`

// TestChatBrowser: headless Chromium, on a page served for the test,
// talks to chat over WebSocket: its JSON message comes back with the same
// seq, send time and text.
func TestChatBrowser(t *testing.T) {
	testmode.SkipShort(t, "starts Chromium (15 s on a busy machine); runs in the normal step")
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed: apt-get install chromium")
	}
	const token = "browser-token"
	addr := servertest.Start(t, server.Config{Token: token})
	got := make(chan string, 4)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	page := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			fmt.Fprintf(w, chatPage, addr, api.PathChat, api.QueryAccessToken, token)
		case "/result":
			b, _ := io.ReadAll(r.Body)
			got <- string(b)
		default:
			http.NotFound(w, r)
		}
	})}
	go page.Serve(ln)
	t.Cleanup(func() { page.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "http://"+ln.Addr().String()+"/")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	select {
	case s := <-got:
		var m struct {
			Seq  uint64 `json:"seq"`
			Sent int64  `json:"sent_unix_nano"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal([]byte(s), &m); err != nil || m.Seq != 7 || m.Text != "from the browser" || m.Sent == 0 {
			t.Fatalf("the browser got %q (%v), want seq 7 and its text back", s, err)
		}
		t.Logf("Chromium's chat message came back: %s", s)
	case <-ctx.Done():
		t.Fatal("no answer from the browser within a minute")
	}
}
