package server_test

// Who may call the server: the bearer token (TestAuth) and TLS (TestTLS*).

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/tlsutil"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
)

func TestAuth(t *testing.T) {
	const token = "tok-3f9a_Z"
	addr := servertest.Start(t, server.Config{Token: token})
	c := newClient(t, addr, "")

	rest := []struct {
		name   string
		header string // Authorization; "" for none
		want   int
	}{
		{"none", "", http.StatusUnauthorized},
		{"wrong token", "Bearer nope", http.StatusUnauthorized},
		{"token prefix", "Bearer " + token[:4], http.StatusUnauthorized},
		{"token plus more", "Bearer " + token + "x", http.StatusUnauthorized},
		{"wrong scheme", "Basic " + token, http.StatusUnauthorized},
		{"bare token", token, http.StatusUnauthorized},
		{"right", "Bearer " + token, http.StatusOK},
		{"scheme in lower case", "bearer " + token, http.StatusOK},
	}
	for _, tc := range rest {
		t.Run("REST/"+tc.name, func(t *testing.T) {
			var hdr []string
			if tc.header != "" {
				hdr = []string{"Authorization", tc.header}
			}
			for _, path := range []string{api.PathVersion, api.PathList, api.PathStream} {
				resp, body := c.do(t, http.MethodGet, path, nil, hdr...)
				wantStatus(t, resp, body, tc.want)
				if tc.want == http.StatusUnauthorized {
					wantJSONError(t, resp, body, "token")
					if resp.Header.Get("WWW-Authenticate") == "" {
						t.Error("401 without WWW-Authenticate")
					}
				}
			}
		})
	}
	t.Run("REST/exempt", func(t *testing.T) {
		for _, path := range []string{api.PathHealth, api.PathMetrics} {
			resp, body := c.do(t, http.MethodGet, path, nil)
			wantStatus(t, resp, body, http.StatusOK)
		}
	})

	grpcCases := []struct {
		name string
		md   []string
		want codes.Code
	}{
		{"none", nil, codes.Unauthenticated},
		{"wrong token", []string{"authorization", "Bearer nope"}, codes.Unauthenticated},
		{"right", []string{"authorization", "Bearer " + token}, codes.OK},
		{"second value right", []string{"authorization", "Bearer nope", "authorization", "Bearer " + token}, codes.OK},
	}
	for _, tc := range grpcCases {
		t.Run("gRPC/"+tc.name, func(t *testing.T) {
			ctx := metadata.AppendToOutgoingContext(c.ctx(t), tc.md...)
			_, err := c.grpc.GetVersion(ctx, &pb.EmptyRequest{})
			if status.Code(err) != tc.want {
				t.Errorf("GetVersion: %v, want %v", err, tc.want)
			}
			_, err = c.grpc.PostLargePayload(ctx, data.ProtoList(data.MustLandings()[:2]))
			if status.Code(err) != tc.want {
				t.Errorf("PostLargePayload: %v, want %v", err, tc.want)
			}
			stream, err := c.grpc.GetLargePayload(ctx, &pb.EmptyRequest{})
			if err == nil {
				_, err = stream.Recv()
			}
			if status.Code(err) != tc.want {
				t.Errorf("GetLargePayload: %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("gRPC/exempt", func(t *testing.T) {
		resp, err := healthpb.NewHealthClient(c.cc).Check(c.ctx(t), &healthpb.HealthCheckRequest{})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health without a token: %v, %v", resp, err)
		}
		services := listServices(t, c.ctx(t), c)
		if !services["MeteoriteLandingsService.MeteoriteLandingsService"] || !services["grpc.health.v1.Health"] {
			t.Fatalf("reflection without a token lists %v", services)
		}
	})
}

// listServices asks server reflection for the service names.
func listServices(t *testing.T, ctx context.Context, c *client) map[string]bool {
	t.Helper()
	stream, err := reflectionpb.NewServerReflectionClient(c.cc).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.CloseSend()
	out := map[string]bool{}
	for _, s := range resp.GetListServicesResponse().GetService() {
		out[s.GetName()] = true
	}
	return out
}

// tlsServer is a TLS server on 127.0.0.1 with a self-signed certificate.
type tlsServer struct {
	addr     string
	certFile string // the certificate's PEM, for curl --cacert and friends
	roots    *x509.CertPool
}

func startTLS(t *testing.T, cfg server.Config) tlsServer {
	t.Helper()
	cert, certPEM, err := tlsutil.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	certFile := filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	return tlsServer{addr: servertest.Start(t, cfg), certFile: certFile, roots: roots}
}

// restTLS is a net/http client over TLS: it offers ALPN http/1.1 only, as
// net/http does when HTTP/2 is not forced.
func (s tlsServer) restTLS(t *testing.T) *http.Client {
	tr := &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: s.roots}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: hangGuard}
}

// grpcTLS is a grpc-go client with its own TLS credentials (ALPN h2).
func (s tlsServer) grpcTLS(t *testing.T) pb.MeteoriteLandingsServiceClient {
	cc, err := grpc.NewClient("passthrough:///"+s.addr,
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: s.roots, ServerName: "127.0.0.1"})),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return pb.NewMeteoriteLandingsServiceClient(cc)
}

func getVersionREST(t *testing.T, hc *http.Client, url, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/api/MeteoriteLandings", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v string
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &v) != nil || v != data.Version {
		t.Fatalf("GET %s: status %d, body %.200q", req.URL, resp.StatusCode, b)
	}
	return resp
}

func TestTLSBothProtocols(t *testing.T) {
	s := startTLS(t, server.Config{Token: "sekret"})
	resp := getVersionREST(t, s.restTLS(t), "https://"+s.addr, "sekret")
	if resp.TLS == nil || resp.ProtoMajor != 1 {
		t.Errorf("REST: TLS %v, protocol %s; want TLS, HTTP/1.1", resp.TLS != nil, resp.Proto)
	}
	c := &client{token: "sekret"}
	g := s.grpcTLS(t)
	v, err := g.GetVersion(c.ctx(t), &pb.EmptyRequest{})
	if err != nil || v.GetApiVersion() != data.Version {
		t.Fatalf("gRPC GetVersion: %v, %v", v, err)
	}
	list, err := g.GetLargePayloadAsList(c.ctx(t), &pb.EmptyRequest{})
	if err != nil {
		t.Fatalf("gRPC GetLargePayloadAsList: %v", err)
	}
	checkProtoLandings(t, "gRPC over TLS", list.GetMeteoriteLandings())
	if _, err := g.GetVersion((&client{}).ctx(t), &pb.EmptyRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("gRPC without token: %v, want Unauthenticated", err)
	}
}

// A plaintext client on the TLS port fails, and is not left hanging: the
// server answers or closes well within the hang guard.
func TestTLSPlaintextClientsFail(t *testing.T) {
	s := startTLS(t, server.Config{HeaderTimeout: 500 * time.Millisecond})

	t.Run("http1", func(t *testing.T) {
		conn := dialRaw(t, s.addr)
		io.WriteString(conn, "GET /api/MeteoriteLandings HTTP/1.1\r\nHost: x\r\n\r\n")
		if b := waitClosed(t, conn); !strings.HasPrefix(string(b), "HTTP/1.0 400 ") {
			t.Errorf("answer %.200q, want a 400", b)
		}
	})
	t.Run("h2-preface", func(t *testing.T) {
		conn := dialRaw(t, s.addr)
		io.WriteString(conn, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
		if b := waitClosed(t, conn); len(b) > 0 && b[0] != 0x15 { // at most a TLS alert
			t.Errorf("answer %.100q, want a close", b)
		}
	})
	t.Run("silent", func(t *testing.T) {
		waitClosed(t, dialRaw(t, s.addr)) // closed after the header timeout
	})
	t.Run("grpc-plaintext", func(t *testing.T) {
		cc, err := grpc.NewClient("passthrough:///"+s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		_, err = pb.NewMeteoriteLandingsServiceClient(cc).GetVersion((&client{}).ctx(t), &pb.EmptyRequest{})
		if code := status.Code(err); code != codes.Unavailable {
			t.Errorf("plaintext gRPC on the TLS port: %v, want Unavailable (not a deadline)", err)
		}
	})
	t.Run("rest-plaintext", func(t *testing.T) {
		resp, err := (&http.Client{Timeout: hangGuard}).Get("http://" + s.addr + "/api/MeteoriteLandings")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("plaintext REST on the TLS port: status %d, want 400", resp.StatusCode)
			}
		}
	})
	// A TLS client still gets through after all that.
	getVersionREST(t, s.restTLS(t), "https://"+s.addr, "")
}

// Over TLS, a client that offers h2 gets HTTP/2 whatever it speaks: REST
// is served over h2 (routed by its first request's content-type, like
// gRPC on the same port), and one that offers only http/1.1 gets HTTP/1.1.
func TestTLSServesRESTOverH2(t *testing.T) {
	s := startTLS(t, server.Config{})
	for _, tc := range []struct {
		name  string
		rt    http.RoundTripper
		major int
	}{
		{"h2 and http/1.1 offered", &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.roots}, ForceAttemptHTTP2: true}, 2},
		{"h2 only", &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: s.roots}}, 2},
		{"http/1.1 only", &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.roots, NextProtos: []string{"http/1.1"}}}, 1},
	} {
		resp, err := (&http.Client{Transport: tc.rt, Timeout: hangGuard}).Get("https://" + s.addr + "/api/MeteoriteLandings")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.ProtoMajor != tc.major || resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "\"API Version 1.0\"" {
			t.Errorf("%s: %s status %d %q, want HTTP/%d 200 with the version", tc.name, resp.Proto, resp.StatusCode, body, tc.major)
		}
	}
	// gRPC over TLS still reaches the native server on the same port.
	if _, err := s.grpcTLS(t).GetVersion(t.Context(), &pb.EmptyRequest{}); err != nil {
		t.Errorf("gRPC over TLS: %v", err)
	}
}

func TestTLSAllowPlaintext(t *testing.T) {
	s := startTLS(t, server.Config{TLSAllowPlaintext: true})
	getVersionREST(t, s.restTLS(t), "https://"+s.addr, "")
	c := newClient(t, s.addr, "")
	resp, _ := c.do(t, http.MethodGet, "/api/MeteoriteLandings", nil)
	if resp.StatusCode != http.StatusOK || resp.TLS != nil {
		t.Errorf("plaintext REST: status %d", resp.StatusCode)
	}
	if _, err := c.grpc.GetVersion(c.ctx(t), &pb.EmptyRequest{}); err != nil {
		t.Errorf("plaintext gRPC: %v", err)
	}
	if _, err := s.grpcTLS(t).GetVersion(c.ctx(t), &pb.EmptyRequest{}); err != nil {
		t.Errorf("gRPC over TLS: %v", err)
	}
	m := scrape(t, c)
	if got := m[counterKey(api.MetricRequests, string(api.GRPC), api.MethodGetVersion)]; got != 2 {
		t.Errorf("gRPC GetVersion counted %v times, want 2", got)
	}
}

func TestTLSConfigValidate(t *testing.T) {
	if _, err := server.New(server.Config{TLSAllowPlaintext: true}); err == nil {
		t.Error("TLSAllowPlaintext without TLS: no error")
	}
	if _, err := server.New(server.Config{TLS: &tls.Config{}}); err == nil {
		t.Error("TLS without a certificate: no error")
	}
}

// tool finds an external client, in $PATH or $GOPATH/bin, or skips.
func tool(t *testing.T, name, install string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skipf("%s not installed (%s): skipping the test with the real %s client", name, install, name)
	return ""
}

// runTool runs an external client within the hang guard and returns its
// combined output; a failure fails the test.
func runTool(t *testing.T, exe string, args ...string) string {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.WaitDelay = time.Second
	timer := time.AfterFunc(hangGuard, func() { cmd.Process.Kill() })
	defer timer.Stop()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(exe), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestTLSCurl(t *testing.T) {
	curl := tool(t, "curl", "apt-get install curl")
	s := startTLS(t, server.Config{Token: "sekret"})
	url := "https://" + s.addr + "/api/MeteoriteLandings"
	for _, trust := range [][]string{{"--cacert", s.certFile}, {"-k"}} {
		args := append([]string{"-sS", "--fail", "--max-time", "10", "-H", "Authorization: Bearer sekret"}, trust...)
		if out := runTool(t, curl, append(args, url)...); strings.TrimSpace(out) != `"`+data.Version+`"` {
			t.Errorf("curl %v: %q", trust, out)
		}
	}
	// Large payload over TLS, counted: 1000 records.
	out := runTool(t, curl, "-sS", "--fail", "--max-time", "10", "--cacert", s.certFile, "-H", "Authorization: Bearer sekret", url+"/LargePayload")
	checkJSONLandings(t, "curl LargePayload", []byte(out))
}

func TestTLSGrpcurl(t *testing.T) {
	grpcurl := tool(t, "grpcurl", "go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4")
	s := startTLS(t, server.Config{Token: "sekret"})
	method := "MeteoriteLandingsService.MeteoriteLandingsService/GetVersion"
	for _, trust := range [][]string{{"-cacert", s.certFile}, {"-insecure"}} {
		args := append([]string{"-max-time", "10", "-H", "authorization: Bearer sekret"}, trust...)
		out := runTool(t, grpcurl, append(args, s.addr, method)...)
		if !strings.Contains(out, data.Version) {
			t.Errorf("grpcurl %v: %q", trust, out)
		}
	}
}

func TestTLSGhz(t *testing.T) {
	ghz := tool(t, "ghz", "go install github.com/bojand/ghz/cmd/ghz@v0.121.0")
	s := startTLS(t, server.Config{})
	method := "MeteoriteLandingsService.MeteoriteLandingsService/GetVersion"
	for _, trust := range [][]string{{"--cacert", s.certFile}, {"--skipTLS"}} {
		args := append([]string{"--call", method, "-n", "50", "-c", "2", "--timeout", "10s", "--format", "json"}, trust...)
		out := runTool(t, ghz, append(args, s.addr)...)
		var rep struct {
			Count          int            `json:"count"`
			StatusCodeDist map[string]int `json:"statusCodeDistribution"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("ghz %v: %v\n%s", trust, err, out)
		}
		if rep.Count != 50 || rep.StatusCodeDist["OK"] != 50 {
			t.Errorf("ghz %v: %d calls, status codes %v; want 50 OK", trust, rep.Count, rep.StatusCodeDist)
		}
	}
}
