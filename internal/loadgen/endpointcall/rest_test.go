package endpointcall

import (
	"strings"
	"testing"
)

func TestParseREST(t *testing.T) {
	body := writeFile(t, t.TempDir(), "body.json", `{"a": 1}`)
	for _, tc := range []struct {
		url, method, body string
		headers           []string
		want              string // Name, or the error's start
		contentType       string
	}{
		{url: "http://127.0.0.1:8080/items", want: "GET http://127.0.0.1:8080/items"},
		{url: "http://example.com/items", want: "GET http://example.com:80/items"},
		{url: "https://example.com/x?q=1", want: "GET https://example.com:443/x?q=1"},
		{url: "http://h:1/x", body: body, want: "POST http://h:1/x", contentType: "application/json"},
		{url: "http://h:1/x", method: "put", body: body, headers: []string{"Content-Type: text/plain"}, want: "PUT http://h:1/x", contentType: "text/plain"},
		{url: "h:1/x", want: "--rest-url"},
		{url: "ftp://h/x", want: "--rest-url"},
		{url: "http:///x", want: "--rest-url"},
		{url: "http://h:1/x", headers: []string{"NoColon"}, want: "--header"},
		{url: "http://h:1/x", headers: []string{"Bad Key: v"}, want: "--header"},
		{url: "http://h:1/x", body: "/does/not/exist", want: "--rest-body"},
	} {
		r, err := ParseREST(tc.url, tc.method, tc.body, tc.headers)
		switch {
		case err != nil:
			if !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%q: error %q, want one line starting %q", tc.url, err, tc.want)
			}
		case r.Name() != tc.want:
			t.Errorf("%q: %q, want %q", tc.url, r.Name(), tc.want)
		case r.Header.Get("Content-Type") != tc.contentType || r.Header.Get("Accept") != "application/json":
			t.Errorf("%q: headers %v", tc.url, r.Header)
		}
	}
}
