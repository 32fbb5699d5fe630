package server_test

// The smaller items of issue 20, each against the real server.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// TestChunkedWithContentLength: a request with both Transfer-Encoding:
// chunked and Content-Length is answered, then its connection is closed
// (RFC 9112 §6.3), so nothing after it on the connection is read as a
// request.
func TestChunkedWithContentLength(t *testing.T) {
	conn := rawServer(t)
	// The chunked body is empty; the Content-Length claims 20 bytes, which
	// a server that believed it would take from the "smuggled" request.
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"+
		"GET %s HTTP/1.1\r\nHost: x\r\n\r\n", api.PathVersion, api.PathVersion)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !resp.Close {
		t.Errorf("%s, Connection %q (%q); want 200 and the connection closed", resp.Status, resp.Header.Get("Connection"), body)
	}
	rest, _ := io.ReadAll(br) // the server closes: no second answer
	if len(rest) > 0 {
		t.Errorf("the server answered the request after it: %.200q", rest)
	}
}

// TestReadTimeoutMessage: a body that does not arrive within the read
// timeout gets 408 with a message that shows no address.
func TestReadTimeoutMessage(t *testing.T) {
	addr := servertest.Start(t, server.Config{ReadTimeout: 300 * time.Millisecond})
	for _, ct := range []string{api.TypeJSON, api.TypeProtobuf} {
		conn := dialRaw(t, addr)
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: 1000\r\n\r\n[{\"id\":1", api.PathList, ct)
		resp, body := readResponse(t, conn)
		if resp.StatusCode != http.StatusRequestTimeout || bytes.Contains(body, []byte("127.0.0.1")) || bytes.Contains(body, []byte("tcp")) {
			t.Errorf("%s: %s %s; want 408 without addresses", ct, resp.Status, body)
		}
		t.Logf("%s: %s %s", ct, resp.Status, bytes.TrimSpace(body))
	}
}

// TestErrorEchoBounded: an error that quotes the request quotes at most
// about 100 bytes of any one value: a 1 MiB number is not sent back.
func TestErrorEchoBounded(t *testing.T) {
	c := startClient(t, server.Config{})
	huge := strings.Repeat("1", 1<<20)
	for _, tc := range []struct{ name, body, path string }{
		{"number", `[{"id":` + huge + `}]`, api.PathList},
	} {
		resp, body := c.do(t, http.MethodPost, tc.path, []byte(tc.body), "Content-Type", api.TypeJSON)
		if resp.StatusCode != http.StatusBadRequest || len(body) > 1500 || !bytes.Contains(body, []byte("bytes)")) {
			t.Errorf("%s: %s, %d-byte body; want 400 with a short body that says what was cut", tc.name, resp.Status, len(body))
		}
		t.Logf("%s: %s %.300s", tc.name, resp.Status, bytes.TrimSpace(body))
	}
	resp, body := c.do(t, http.MethodGet, "/"+strings.Repeat("p", 30000), nil)
	if resp.StatusCode != http.StatusNotFound || len(body) > 1500 {
		t.Errorf("long path: %s, %d-byte body; want 404 with a short body", resp.Status, len(body))
	}
}
