package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/server"
)

func codecKey(name string) string { return api.MetricJSONCodec + `{codec="` + name + `"}` }

// A request with jsoncodec.Header is encoded and decoded by that codec
// (counted per codec, its answers read by encoding/json into the same
// records); one without it, as curl sends, gets encoding/json's exact
// output; an unknown codec is a 400.
func TestJSONCodecHeader(t *testing.T) {
	c := startClient(t, server.Config{})
	ls := data.MustLandings()
	var std bytes.Buffer
	if err := json.NewEncoder(&std).Encode(ls); err != nil {
		t.Fatal(err)
	}
	post, _ := json.Marshal(ls[:10])

	before := scrape(t, c)
	// Plain: no header, byte for byte what encoding/json writes.
	resp, body := c.do(t, http.MethodGet, api.PathList, nil)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, std.Bytes()) {
		t.Fatalf("plain list: %s, %d bytes; want encoding/json's %d bytes", resp.Status, len(body), std.Len())
	}
	for _, name := range jsoncodec.Names() {
		hdr := []string{jsoncodec.Header, name}
		resp, body := c.do(t, http.MethodGet, api.PathList, nil, hdr...)
		var got []data.Landing
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got) != len(ls) || got[5].ID != ls[5].ID {
			t.Errorf("%s: list: %s, %d records", name, resp.Status, len(got))
		}
		resp, body = c.do(t, http.MethodGet, api.PathStream, nil, hdr...)
		if lines := strings.Count(string(body), "\n"); resp.StatusCode != http.StatusOK || lines != len(ls) {
			t.Errorf("%s: stream: %s, %d lines", name, resp.Status, lines)
		}
		resp, body = c.do(t, http.MethodPost, api.PathList, post, append(hdr, "Content-Type", api.TypeJSON)...)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), data.Success) {
			t.Errorf("%s: post: %s: %s", name, resp.Status, body)
		}
		resp, body = c.do(t, http.MethodPost, api.PathList, []byte(`[{"id":1}] x`), append(hdr, "Content-Type", api.TypeJSON)...)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: post with trailing data: %s: %s", name, resp.Status, body)
		}
	}
	resp, body = c.do(t, http.MethodGet, api.PathList, nil, jsoncodec.Header, "goccy")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "unknown JSON codec") {
		t.Errorf("unknown codec: %s: %s", resp.Status, body)
	}
	after := scrape(t, c)
	for name, want := range map[string]float64{jsoncodec.Std: 5, jsoncodec.V2: 4, jsoncodec.Sonic: 4} {
		if d := after[codecKey(name)] - before[codecKey(name)]; d != want {
			t.Errorf("%s moved by %v, want %v", codecKey(name), d, want)
		}
	}
}
