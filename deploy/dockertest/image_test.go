package dockertest

import (
	"context"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/gen/meteorpb"
)

// nonrootUID is distroless's nonroot user, which the Dockerfile's USER names.
const nonrootUID = 65532

// The HEALTHCHECK's own timing is 15 s between checks; the tests shorten it
// with docker run's --health-* flags, which keep the image's CMD.
var fastHealth = []string{"--health-interval", "500ms", "--health-timeout", "3s", "--health-retries", "3", "--health-start-period", "5s"}

// startContainer runs the image detached on net with port published on
// 127.0.0.1 (an ephemeral host port) and returns its name; removed at the
// end of the test.
// containers numbers the containers of this process (the tests run in
// parallel).
var containers atomic.Int64

func startContainer(t *testing.T, im *image, network, port string, runArgs, cmd []string) string {
	t.Helper()
	name := "meteorbench-dockertest-" + runID + "-" + strconv.FormatInt(containers.Add(1), 10)
	args := []string{"run", "-d", "--name", name, "--label", label + "=1", "--network", network,
		"-p", "127.0.0.1::" + port}
	args = append(args, fastHealth...)
	args = append(args, runArgs...)
	args = append(args, im.tag)
	args = append(args, cmd...)
	if _, err := docker(time.Minute, nil, args...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("docker logs %s:\n%s", name, logs(name))
		}
		if _, err := docker(30*time.Second, nil, "rm", "-f", "-v", name); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	return name
}

// hostAddr is the 127.0.0.1 address the container's port is published on.
func hostAddr(t *testing.T, container, port string) string {
	t.Helper()
	out, err := docker(20*time.Second, nil, "port", container, port+"/tcp")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "127.0.0.1:") {
			return strings.TrimSpace(l)
		}
	}
	t.Fatalf("docker port %s %s: no 127.0.0.1 binding in %q", container, port, out)
	return ""
}

// waitHealthy polls the HEALTHCHECK's status until healthy and returns the
// last check's output.
func waitHealthy(t *testing.T, container string) string {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	start := time.Now()
	for {
		st := inspect(t, container, "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}")
		if st == "running healthy" {
			out := inspect(t, container, `{{range .State.Health.Log}}{{.ExitCode}} {{.Output}}{{end}}`)
			t.Logf("HEALTHCHECK: healthy after %v", time.Since(start).Round(100*time.Millisecond))
			return strings.TrimSpace(out)
		}
		if !strings.HasPrefix(st, "running") {
			t.Fatalf("container %s is %q, not running:\n%s", container, st, logs(container))
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s not healthy after 40 s (%q); health log: %s", container, st,
				inspect(t, container, `{{range .State.Health.Log}}[{{.ExitCode}}: {{.Output}}] {{end}}`))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// checkProtocols calls the server on addr over both protocols: REST with
// net/http, gRPC with grpc-go (health and GetVersion).
func checkProtocols(t *testing.T, addr string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	for _, path := range []string{api.PathHealth, api.PathVersion} {
		resp, err := c.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("REST GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("REST GET %s: %s %s", path, resp.Status, body)
		}
		t.Logf("REST GET %s: %s %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("gRPC health: %v %v", h.GetStatus(), err)
	}
	v, err := meteorpb.NewMeteoriteLandingsServiceClient(conn).GetVersion(ctx, &meteorpb.EmptyRequest{})
	if err != nil {
		t.Fatalf("gRPC GetVersion: %v", err)
	}
	t.Logf("gRPC health: %v; GetVersion: %v", h.GetStatus(), strings.TrimSpace(v.String()))
}

// checkNonRoot checks the container's main process runs as nonroot, from
// docker top (ps on the host) and, where this process can see it, from the
// host's /proc/<pid>/status.
func checkNonRoot(t *testing.T, container string) {
	t.Helper()
	out, err := docker(20*time.Second, nil, "top", container, "-o", "pid,uid,gid,comm")
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(out, "\n")
	found := false
	for _, r := range rows[1:] {
		f := strings.Fields(r)
		if len(f) < 4 || f[3] != "meteorbench" {
			continue
		}
		found = true
		if f[1] != strconv.Itoa(nonrootUID) || f[2] != strconv.Itoa(nonrootUID) {
			t.Fatalf("docker top: meteorbench runs as uid %s gid %s, want %d:\n%s", f[1], f[2], nonrootUID, out)
		}
	}
	if !found {
		t.Fatalf("docker top: no meteorbench process:\n%s", out)
	}
	t.Logf("docker top -o pid,uid,gid,comm: %s", strings.Join(strings.Fields(strings.Join(rows[1:], " ")), " "))
	pid := inspect(t, container, "{{.State.Pid}}")
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Logf("/proc/%s/status not readable here (%v): docker top stands alone", pid, err)
		return
	}
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) == 5 && (f[0] == "Uid:" || f[0] == "Gid:") {
			for _, id := range f[1:] { // real, effective, saved, file system
				if id != strconv.Itoa(nonrootUID) {
					t.Fatalf("/proc/%s/status: %s, want all %d", pid, l, nonrootUID)
				}
			}
			t.Logf("/proc/%s/status: %s", pid, strings.Join(f, " "))
		}
		if strings.HasPrefix(l, "CapEff:") {
			t.Logf("/proc/%s/status: %s", pid, strings.Join(strings.Fields(l), " "))
		}
	}
}

func TestImage(t *testing.T) {
	t.Parallel()
	im := needImage(t)
	network := newNetwork(t)

	t.Run("default", func(t *testing.T) {
		t.Parallel()
		c := startContainer(t, im, network, "8080", nil, nil)
		t.Logf("health check output: %s", waitHealthy(t, c))
		addr := hostAddr(t, c, "8080")
		checkProtocols(t, addr)
		checkNonRoot(t, c)
		checkDrain(t, c, addr)
	})
	// serve --addr :9000 leaves $METEORBENCH_ADDR at :8080: the check can
	// only be healthy through the address file serve wrote in /tmp. Run
	// the way the Kubernetes manifest runs it: read-only root with a
	// tmpfs at /tmp, no capabilities, no privilege escalation.
	t.Run("addr-flag-read-only", func(t *testing.T) {
		t.Parallel()
		c := startContainer(t, im, network, "9000",
			[]string{"--read-only", "--tmpfs", "/tmp", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"},
			[]string{"serve", "--addr", ":9000"})
		out := waitHealthy(t, c)
		t.Logf("health check output: %s", out)
		if !strings.Contains(out, ":9000") {
			t.Fatalf("the health check did not check :9000: %s", out)
		}
		checkProtocols(t, hostAddr(t, c, "9000"))
		checkNonRoot(t, c)
	})
	t.Run("addr-env", func(t *testing.T) {
		t.Parallel()
		c := startContainer(t, im, network, "9000", []string{"-e", "METEORBENCH_ADDR=:9000"}, nil)
		out := waitHealthy(t, c)
		t.Logf("health check output: %s", out)
		if !strings.Contains(out, ":9000") {
			t.Fatalf("the health check did not check :9000: %s", out)
		}
		checkProtocols(t, hostAddr(t, c, "9000"))
	})
}

// checkDrain stops the container while a gRPC stream is in flight, read
// slowly by a client whose flow-control window is fixed and small, so the
// server cannot finish it into socket buffers: the stream must end whole with
// status OK after the SIGTERM, and the container exit 0 within Docker's 10 s
// grace period (a kill would be 137). The server's GOAWAY (its drain
// began: the connection leaves READY) must come while the stream still
// runs, or the test checked no drain.
//
// The client reads on a schedule, readFor for the whole stream, and sleeps
// only when it is ahead of it: a machine so loaded that a 1 ms sleep takes
// several (CI's race step beside the Docker tests) makes it read faster,
// not longer. Sleeping 1 ms every 20 records made the stream outlast the
// server's 8 s drain there (23,802 of 30,000 records in 10.3 s).
func checkDrain(t *testing.T, container, addr string) {
	t.Helper()
	const (
		records = 30000
		readFor = 3 * time.Second
	)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, api.MetadataRecords, strconv.Itoa(records))
	stream, err := meteorpb.NewMeteoriteLandingsServiceClient(conn).GetLargePayload(ctx, &meteorpb.EmptyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatalf("drain: first record: %v", err)
	}
	readStart := time.Now()

	// The stream has begun: watch for the server's GOAWAY, and stop now.
	goaway := make(chan time.Duration, 1)
	go func() {
		for st := conn.GetState(); st == connectivity.Ready || st == connectivity.Connecting; st = conn.GetState() {
			if !conn.WaitForStateChange(ctx, st) {
				return // ctx ended
			}
		}
		goaway <- time.Since(readStart)
	}()
	stopStart := time.Now()
	stopped := make(chan time.Duration, 1)
	stopErr := make(chan error, 1)
	go func() {
		_, err := docker(30*time.Second, nil, "stop", "--time", "10", container)
		stopped <- time.Since(stopStart)
		stopErr <- err
	}()
	got := 1
	for {
		_, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("drain: the in-flight stream broke after %d of %d records, %v after the stop began: %v",
				got, records, time.Since(stopStart).Round(10*time.Millisecond), err)
		}
		got++
		if got%20 == 0 {
			if ahead := time.Until(readStart.Add(readFor * time.Duration(got) / records)); ahead > 0 {
				time.Sleep(ahead)
			}
		}
	}
	streamDone := time.Since(stopStart)
	var drainBegan time.Duration // since stopStart
	select {
	case d := <-goaway:
		drainBegan = d - stopStart.Sub(readStart)
	case <-time.After(10 * time.Second):
		t.Fatal("drain: no GOAWAY from the server within 10 s of the stream's end")
	}
	if drainBegan >= streamDone {
		t.Fatalf("drain: the stream ended %v after the stop began, before the server's GOAWAY (%v): no drain was checked",
			streamDone.Round(10*time.Millisecond), drainBegan.Round(10*time.Millisecond))
	}
	stopTook := <-stopped
	if err := <-stopErr; err != nil {
		t.Fatal(err)
	}
	if got != records {
		t.Fatalf("drain: %d records, want %d", got, records)
	}
	code := inspect(t, container, "{{.State.ExitCode}}")
	t.Logf("docker stop: the server's GOAWAY came %v after the stop began; the in-flight gRPC stream (%d records) ended OK %v after the stop began; the container exited %s after %v",
		drainBegan.Round(10*time.Millisecond), got, streamDone.Round(10*time.Millisecond), code, stopTook.Round(10*time.Millisecond))
	t.Logf("last log lines:\n%s", lastLines(logs(container), 3))
	if code != "0" {
		t.Fatalf("docker stop: exit code %s, want 0", code)
	}
	if stopTook >= 10*time.Second {
		t.Fatalf("docker stop took %v: the grace period ran out", stopTook)
	}
	if stopTook < streamDone-200*time.Millisecond {
		t.Fatalf("the container exited (%v) before the stream it was draining ended (%v)", stopTook, streamDone)
	}
}
