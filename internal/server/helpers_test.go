package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protodelim"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// hangGuard bounds every network step of a test: generous, only there so a
// bug shows as a failure instead of a hung test binary. Nothing asserts on
// durations.
const hangGuard = 20 * time.Second

// client is a real net/http client and a real grpc-go client, both aimed at
// the same port.
type client struct {
	addr  string
	token string // sent when not empty
	http  *http.Client
	cc    *grpc.ClientConn
	grpc  pb.MeteoriteLandingsServiceClient
}

func newClient(t testing.TB, addr, token string) *client {
	t.Helper()
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 8, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	cc, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		t.Fatalf("grpc.NewClient: %v", err)
	}
	t.Cleanup(func() { cc.Close() })
	return &client{
		addr: addr, token: token,
		http: &http.Client{Transport: tr, Timeout: hangGuard},
		cc:   cc, grpc: pb.NewMeteoriteLandingsServiceClient(cc),
	}
}

// startClient starts a server with cfg (servertest.Start) and returns a
// client of it that sends cfg.Token.
func startClient(t testing.TB, cfg server.Config) *client {
	t.Helper()
	return newClient(t, servertest.Start(t, cfg), cfg.Token)
}

// do sends one HTTP request and reads the whole response. hdr holds
// header name/value pairs.
func (c *client) do(t testing.TB, method, path string, body []byte, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+c.addr+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp, b
}

// ctx returns a context bounded by the hang guard, with the token in the
// outgoing gRPC metadata when the client has one.
func (c *client) ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	if c.token != "" {
		ctx = metadataWithToken(ctx, c.token)
	}
	return ctx
}

func metadataWithToken(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// diffLanding describes the first field where got differs from want, or
// returns "".
func diffLanding(got, want data.Landing) string {
	floatEq := func(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	switch {
	case got.ID != want.ID:
		return fmt.Sprintf("id %d, want %d", got.ID, want.ID)
	case got.Name != want.Name:
		return fmt.Sprintf("name %q, want %q", got.Name, want.Name)
	case got.NameType != want.NameType:
		return fmt.Sprintf("nametype %q, want %q", got.NameType, want.NameType)
	case got.RecClass != want.RecClass:
		return fmt.Sprintf("recclass %q, want %q", got.RecClass, want.RecClass)
	case !floatEq(got.Mass, want.Mass):
		return fmt.Sprintf("mass %v, want %v", fmtPtr(got.Mass), fmtPtr(want.Mass))
	case got.Fall != want.Fall:
		return fmt.Sprintf("fall %q, want %q", got.Fall, want.Fall)
	case (got.Year == nil) != (want.Year == nil) || got.Year != nil && !got.Year.Equal(*want.Year):
		return fmt.Sprintf("year %v, want %v", fmtPtr(got.Year), fmtPtr(want.Year))
	case !floatEq(got.RecLat, want.RecLat):
		return fmt.Sprintf("reclat %v, want %v", fmtPtr(got.RecLat), fmtPtr(want.RecLat))
	case !floatEq(got.RecLong, want.RecLong):
		return fmt.Sprintf("reclong %v, want %v", fmtPtr(got.RecLong), fmtPtr(want.RecLong))
	case (got.GeoLocation == nil) != (want.GeoLocation == nil):
		return fmt.Sprintf("geolocation %v, want %v", got.GeoLocation, want.GeoLocation)
	case got.GeoLocation != nil && (got.GeoLocation.Type != want.GeoLocation.Type ||
		!slices.Equal(got.GeoLocation.Coordinates, want.GeoLocation.Coordinates)):
		return fmt.Sprintf("geolocation %+v, want %+v", *got.GeoLocation, *want.GeoLocation)
	}
	return ""
}

func fmtPtr[T any](p *T) string {
	if p == nil {
		return "<absent>"
	}
	return fmt.Sprint(*p)
}

// checkLandings compares records with the data set, field by field.
func checkLandings(t testing.TB, what string, got []data.Landing) {
	t.Helper()
	want := data.MustLandings()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := diffLanding(got[i], want[i]); d != "" {
			t.Fatalf("%s: record %d: %s", what, i, d)
		}
	}
}

// checkJSONLandings decodes a JSON array of records and compares it with
// the data set.
func checkJSONLandings(t testing.TB, what string, body []byte) {
	t.Helper()
	var ls []data.Landing
	if err := json.Unmarshal(body, &ls); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	checkLandings(t, what, ls)
}

// checkProtoLandings converts messages and compares them with the data set.
func checkProtoLandings(t testing.TB, what string, ms []*pb.MeteoriteLanding) {
	t.Helper()
	checkLandings(t, what, fromProtos(t, ms))
}

// scrape reads /metrics and returns every sample of the meteorbench_
// counters, keyed like `name{method="...",protocol="..."}` (labels sorted).
func scrape(t testing.TB, c *client) map[string]float64 {
	t.Helper()
	resp, body := c.do(t, http.MethodGet, api.PathMetrics, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s: %s", resp.Status, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		if !strings.HasPrefix(name, "meteorbench_") {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			slices.Sort(labels)
			key := name + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// counterKey names one requests or errors sample as scrape keys it.
func counterKey(metric, protocol, method string) string {
	return fmt.Sprintf("%s{method=%q,protocol=%q}", metric, method, protocol)
}

func wantContentType(t *testing.T, resp *http.Response, want string) {
	t.Helper()
	if got := resp.Header.Get("Content-Type"); got != want {
		t.Errorf("%s %s: Content-Type %q, want %q", resp.Request.Method, resp.Request.URL.Path, got, want)
	}
}

func wantStatus(t *testing.T, resp *http.Response, body []byte, want int) {
	t.Helper()
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %s, want %d; body %.200q", resp.Request.Method, resp.Request.URL.Path, resp.Status, want, body)
	}
}

// wantJSONError checks an error response: JSON {"error": "..."} mentioning want.
func wantJSONError(t *testing.T, resp *http.Response, body []byte, want string) {
	t.Helper()
	wantContentType(t, resp, api.TypeJSON)
	var e struct {
		Error string `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.Error == "" {
		t.Fatalf("error body %q (%v): want {\"error\": \"...\"}", body, err)
	}
	if !strings.Contains(e.Error, want) {
		t.Errorf("error %q does not mention %q", e.Error, want)
	}
}

func fromProtos(t testing.TB, ms []*pb.MeteoriteLanding) []data.Landing {
	t.Helper()
	out := make([]data.Landing, len(ms))
	for i, m := range ms {
		l, err := data.FromProto(m)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		out[i] = l
	}
	return out
}

func decodeNDJSON(t testing.TB, body []byte) []data.Landing {
	t.Helper()
	var ls []data.Landing
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		var l data.Landing
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %d: %v", len(ls)+1, err)
		}
		ls = append(ls, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ls
}

func decodeDelimited(t testing.TB, body []byte) []*pb.MeteoriteLanding {
	t.Helper()
	r := bufio.NewReader(bytes.NewReader(body))
	var ms []*pb.MeteoriteLanding
	for {
		m := new(pb.MeteoriteLanding)
		err := protodelim.UnmarshalFrom(r, m)
		if errors.Is(err, io.EOF) {
			return ms
		}
		if err != nil {
			t.Fatalf("message %d: %v", len(ms)+1, err)
		}
		ms = append(ms, m)
	}
}

// rawServer starts a server of the default configuration and returns a
// bare TCP connection to it (dialRaw's).
func rawServer(t testing.TB) net.Conn {
	return dialRaw(t, servertest.Start(t, server.Config{}))
}

// dialRaw opens a plain TCP connection, closed when the test ends.
func dialRaw(t testing.TB, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, hangGuard)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(hangGuard)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// waitClosed reads until the server closes conn and returns what it sent.
// A read that hits the hang guard fails the test: the server kept the
// connection open.
func waitClosed(t *testing.T, conn net.Conn) []byte {
	t.Helper()
	b, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server did not close the connection (read %d bytes: %.100q)", len(b), b)
	}
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("reading until close: %v", err)
	}
	return b
}

// healthy checks that the server still answers a normal REST call and a
// normal gRPC call, on the long-lived client's connections and on new ones.
func healthy(t *testing.T, shared *client) {
	t.Helper()
	for i, c := range []*client{shared, newClient(t, shared.addr, "")} {
		resp, body := c.do(t, http.MethodGet, api.PathVersion, nil)
		if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != `"`+data.Version+`"` {
			t.Fatalf("afterwards (client %d): REST GetVersion: %s %q", i, resp.Status, body)
		}
		v, err := c.grpc.GetVersion(c.ctx(t), &pb.EmptyRequest{})
		if err != nil || v.GetApiVersion() != data.Version {
			t.Fatalf("afterwards (client %d): gRPC GetVersion: %v, %v", i, v, err)
		}
	}
}

// recvAll receives a server stream to its end. On an error it returns the
// messages received before it.
func recvAll(st interface {
	Recv() (*pb.MeteoriteLanding, error)
}) ([]*pb.MeteoriteLanding, error) {
	var ms []*pb.MeteoriteLanding
	for {
		m, err := st.Recv()
		if err == io.EOF {
			return ms, nil
		}
		if err != nil {
			return ms, err
		}
		ms = append(ms, m)
	}
}

// readResponse reads one HTTP/1.1 response, body and all, from a raw
// connection.
func readResponse(t *testing.T, conn net.Conn) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}
