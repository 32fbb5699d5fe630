package server_test

import (
	"io"
	"net/http"
	"testing"

	"golang.org/x/net/http2"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// TestServerSpeaksFirstAfterPreface: a client that sends the HTTP/2 preface
// and then waits for the server's SETTINGS before sending any HEADERS (as
// grpc-go, Java and C-core clients do) gets them. A cmux matcher that needed
// the HEADERS frame to decide (HTTP2HeaderField) would hang this client.
func TestServerSpeaksFirstAfterPreface(t *testing.T) {
	conn := rawServer(t)
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	f, err := fr.ReadFrame()
	if err != nil {
		t.Fatalf("waiting for the server's first frame: %v", err)
	}
	if _, ok := f.(*http2.SettingsFrame); !ok {
		t.Fatalf("first frame from the server: %v, want SETTINGS", f.Header())
	}
}

// TestEveryMethodReachesHTTP: whatever the method of the first request on a
// connection, net/http answers it (no connection reset by the matcher).
func TestEveryMethodReachesHTTP(t *testing.T) {
	addr := servertest.Start(t, server.Config{})
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "PROPFIND", "BREW"} {
		c := newClient(t, addr, "") // a fresh connection each time
		resp, _ := c.do(t, m, api.PathVersion, nil)
		want := http.StatusMethodNotAllowed
		switch m {
		case "GET", "HEAD":
			want = http.StatusOK
		case "OPTIONS":
			want = http.StatusNoContent
		}
		if resp.StatusCode != want {
			t.Errorf("%s as a connection's first request: %s, want %d", m, resp.Status, want)
		}
	}
}
