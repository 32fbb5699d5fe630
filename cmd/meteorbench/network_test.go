package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/link/netns"
	"github.com/meteorbench/meteorbench/internal/results"
)

// HTTP/3: REST (JSON and protobuf), gRPC-Web and Connect over QUIC to the
// own server's UDP port, every call answered and counted.
func TestRunHTTP3(t *testing.T) {
	res := runBinaryJSON(t, "--scenario", "small,large", "--proto", "rest,rest-protobuf,grpc-web,connect",
		"--http-version", "3", "--duration", "300ms", "--warmup", "100ms", "--repeat", "1")
	if len(res.Cells) != 8 {
		t.Fatalf("%d cells, want 8", len(res.Cells))
	}
	for _, c := range res.Cells {
		if c.HTTPVersion != "3" || c.Calls == 0 || c.Errors != 0 || c.BytesPerCall.Received == 0 || c.Connections != 1 {
			t.Errorf("%s: HTTP %q, %d calls, %d errors %v, %g B received, %d connections", c.Key(), c.HTTPVersion, c.Calls, c.Errors, c.ErrorExamples, c.BytesPerCall.Received, c.Connections)
		}
	}
}

// gRPC over HTTP/3: connect-go's gRPC protocol over QUIC to the own
// server's UDP port (its connect-go handlers), the contract's four calls
// answered with 0 errors and their bytes counted on the UDP socket: more
// than the 1000 records' protobuf list (99,828 B) each way that carries
// it; and gRPC's HTTP/2 cell beside it, measured once for 1.1 and 2.
func TestRunGRPCOverHTTP3(t *testing.T) {
	res := runBinaryJSON(t, "--scenario", "small,large,stream,post", "--proto", "grpc",
		"--http-version", "2,3", "--duration", "300ms", "--warmup", "100ms", "--repeat", "1")
	if len(res.Cells) != 8 {
		t.Fatalf("%d cells, want 8 (4 scenarios at grpc-go's HTTP/2 and at HTTP/3)", len(res.Cells))
	}
	at3 := 0
	for _, c := range res.Cells {
		if c.Calls == 0 || c.Errors != 0 || c.Connections != 1 {
			t.Errorf("%s: %d calls, %d errors %v, %d connections", c.Key(), c.Calls, c.Errors, c.ErrorExamples, c.Connections)
		}
		if c.HTTPVersion != "3" {
			continue
		}
		at3++
		b := c.BytesPerCall
		switch c.Scenario {
		case api.Large, api.Stream:
			if b.Received < 99_828 {
				t.Errorf("%s: %g B received a call, want more than the records' 99,828", c.Key(), b.Received)
			}
		case api.Post:
			if b.Sent < 99_828 {
				t.Errorf("%s: %g B sent a call, want more than the records' 99,828", c.Key(), b.Sent)
			}
		default:
			if b.Sent == 0 || b.Received == 0 {
				t.Errorf("%s: %g B sent, %g received a call", c.Key(), b.Sent, b.Received)
			}
		}
	}
	if at3 != 4 {
		t.Errorf("%d cells at HTTP/3, want 4", at3)
	}
}

// A lossy link: the packet link carries the cells (the loss measured
// first, the lossless twin measured beside it), the verdict says what the
// loss did, and the namespaces are gone afterwards.
func TestRunLossyLink(t *testing.T) {
	if err := netns.Available(); err != nil {
		t.Skipf("packet link not available here: %v", err)
	}
	res := runBinaryJSON(t, "--link", "20mbit/20ms/2%loss", "--scenario", "small", "--proto", "rest,grpc", "--concurrency", "4",
		"--http-version", "1.1,3", "--duration", "500ms", "--warmup", "200ms", "--repeat", "1")
	if res.Env.LinkEmulator != results.LinkPacket || len(res.Env.LinkFidelity) != 2 {
		t.Fatalf("link emulator %q, %d fidelity checks: want packet, 2", res.Env.LinkEmulator, len(res.Env.LinkFidelity))
	}
	links := map[string]int{}
	for _, c := range res.Cells {
		links[c.Link]++
		if c.Calls == 0 || c.Errors != 0 {
			t.Errorf("%s: %d calls, %d errors %v", c.Key(), c.Calls, c.Errors, c.ErrorExamples)
		}
	}
	// rest at 1.1 and 3, grpc at its HTTP/2 and at 3, on each link.
	if links["20mbit/20ms"] != 4 || links["20mbit/20ms/2%loss"] != 4 {
		t.Errorf("cells by link %v: want 4 at each of 20mbit/20ms and 20mbit/20ms/2%%loss", links)
	}
	var notes int
	for _, v := range res.Verdicts {
		for _, n := range v.Notes {
			if strings.HasPrefix(n, "at 2% loss") {
				notes++
			}
		}
	}
	if notes != 2 {
		t.Errorf("%d loss notes, want 2 (HTTP/1.1's and HTTP/3's verdicts)", notes)
	}
	// The run's pid is in its namespaces' names: none of them is left.
	entries, _ := os.ReadDir(netns.Dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), netns.Prefix) {
			t.Logf("namespace %s (another run's, or this one's)", filepath.Join(netns.Dir, e.Name()))
		}
	}
	if !strings.Contains(res.Env.LinkFidelity[0].Link, "20mbit/20ms") {
		t.Errorf("fidelity of %q", res.Env.LinkFidelity[0].Link)
	}
}

// runBinaryJSON runs the built meteorbench's run (its own server is the
// same binary's serve) with args, JSON on stdout; a cell judged suspect
// on a busy machine is logged.
func runBinaryJSON(t *testing.T, args ...string) *results.Result {
	t.Helper()
	res, suspect := runWebSuspect(t, meteorbenchBinary(t), append([]string{"run", "--format", "json"}, args...)...)
	if suspect != "" {
		t.Logf("a cell judged suspect on this busy machine (results written): %s", suspect)
	}
	return res
}

// Bad --link values: one line naming --link, exit 2.
func TestRunBadLink(t *testing.T) {
	for _, l := range []string{"20mbit/40ms/51%loss", "20mbit/11s", "32kbit/1ms", "20mbit/40ms/1%los", "fast"} {
		if msg := wantUsageError(t, "run", "--link", l); !strings.Contains(msg, "--link") {
			t.Errorf("--link %s: %q does not name --link", l, msg)
		}
	}
	if msg := wantUsageError(t, "run", "--target", "127.0.0.1:1", "--link", "20mbit/40ms/1%loss"); !strings.Contains(msg, "--link") {
		t.Errorf("a lossy link to a target: %q does not name --link", msg)
	}
}
