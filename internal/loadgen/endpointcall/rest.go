package endpointcall

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/restcall"
)

// REST is a user's REST endpoint: what every call sends.
type REST struct {
	URL    *url.URL
	Method string
	Body   []byte // nil: no body
	Header http.Header
}

// Name is "GET http://127.0.0.1:8080/items".
func (r *REST) Name() string { return r.Method + " " + r.URL.String() }

// ParseREST reads run's --rest-url, --rest-method, --rest-body and
// --header values. The method defaults to GET, or POST with a body; a
// header is "Key: value".
func ParseREST(rawURL, method, bodyFile string, headers []string) (*REST, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--rest-url %q: want http://HOST[:PORT]/PATH or https://...", rawURL)
	}
	if u.Port() == "" {
		u.Host += map[string]string{"http": ":80", "https": ":443"}[u.Scheme]
	}
	r := &REST{URL: u, Method: strings.ToUpper(method), Header: http.Header{}}
	if bodyFile != "" {
		if r.Body, err = os.ReadFile(bodyFile); err != nil {
			return nil, fmt.Errorf("--rest-body: %w", err)
		}
		if r.Method == "" {
			r.Method = http.MethodPost
		}
	}
	if r.Method == "" {
		r.Method = http.MethodGet
	}
	for _, h := range headers {
		k, v, ok := strings.Cut(h, ":")
		if k = strings.TrimSpace(k); !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("--header %q: want 'Key: value'", h)
		}
		r.Header.Add(k, strings.TrimSpace(v))
	}
	if r.Body != nil && r.Header.Get("Content-Type") == "" {
		r.Header.Set("Content-Type", api.TypeJSON)
	}
	if r.Header.Get("Accept") == "" {
		r.Header.Set("Accept", api.TypeJSON)
	}
	return r, nil
}

// restClient calls a REST endpoint over the contract's HTTP/1.1 transport.
type restClient struct {
	tr    *http.Transport
	ep    *REST
	req   *http.Request // the template every call copies
	codec *jsoncodec.Codec
}

func newRESTClient(ep *REST, o call.Options) (*restClient, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	codec, err := jsoncodec.Get(o.JSONCodec)
	if err != nil {
		return nil, err
	}
	tr := restcall.Transport(o)
	if ep.URL.Scheme == "https" && o.Dialer.TLS != nil {
		tr.DialTLSContext = o.Dialer.DialContext // the counted dialer makes the TLS connection
	}
	h := ep.Header.Clone()
	if o.Token != "" {
		h.Set("Authorization", "Bearer "+o.Token)
	}
	u := *ep.URL
	req := &http.Request{Method: ep.Method, URL: &u, Host: u.Host, Header: h, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	return &restClient{tr: tr, ep: ep, req: req, codec: codec}, nil
}

// Caller implements call.Client; every scenario is the endpoint's call.
func (c *restClient) Caller(api.Scenario) (call.Caller, error) { return &restCaller{c: c}, nil }

// Close implements call.Client.
func (c *restClient) Close() error {
	c.tr.CloseIdleConnections()
	return nil
}

// restCaller makes the endpoint's call: the answer must be 2xx and decode
// as JSON (into generic values, timed, with the run's JSON codec).
type restCaller struct {
	c   *restClient
	buf bytes.Buffer
}

func (a *restCaller) Call(ctx context.Context) (call.Outcome, error) {
	timer := call.StartTimer()
	req := a.c.req.WithContext(ctx)
	if body := a.c.ep.Body; body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
	}
	resp, err := a.c.tr.RoundTrip(req)
	if err != nil {
		return call.Outcome{}, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		detail := restcall.ErrorDetail(resp)
		resp.Body.Close()
		return call.Outcome{}, call.HTTPStatus(resp.StatusCode, detail)
	}
	if err := restcall.ReadBody(&a.buf, resp); err != nil {
		return call.Outcome{}, err
	}
	timer.Received()
	t0 := time.Now()
	var v any
	err = a.c.codec.Unmarshal(a.buf.Bytes(), &v)
	timer.Decoded(t0)
	if err != nil {
		if a.buf.Len() == 0 {
			err = errors.New("empty body")
		}
		return call.Outcome{}, call.Invalid("answer is not JSON: %v", err)
	}
	return timer.Outcome(), nil
}
