package dockertest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// label marks everything the tests create, so a leftover is easy to find:
// docker ps -a --filter label=meteorbench.dockertest.
const label = "meteorbench.dockertest"

// repoRoot is the repository root, seen from this package's directory.
var repoRoot = filepath.Join("..", "..")

// runID makes names unique to one test process: tests of other worktrees may
// run against the same engine at the same time.
var runID = func() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(b))
}()

// docker runs the docker client and returns its trimmed stdout; the error
// carries stderr. Every call is bounded.
func docker(timeout time.Duration, stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", args...)
	// The legacy builder: the static Docker 28 client refuses BuildKit without
	// buildx, and the Dockerfile's runtime stage needs no BuildKit feature.
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := strings.TrimSpace(stdout.String())
	if err != nil {
		return out, fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// image is the test-built meteorbench image, shared by the tests of this
// package and removed by TestMain.
type image struct {
	tag     string // the meteorbench image
	base    string // the imported runtime base
	bin     string // the binary inside it, built by the test
	workDir string
}

// generators is held by the tests that run load generators (compose's
// segments, the swarm stack) for their whole run. The tests run in
// parallel, mostly waiting on the engine, but a generator checks its own
// cells (suspect when its batches do not add up to its time): two load runs
// at once on a small machine would judge each other's.
var generators sync.Mutex

var (
	imageOnce sync.Once
	built     *image
	skipWhy   string // set when there is no engine
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := leaveSwarm(); err != nil { // made by TestSwarmStack
		fmt.Fprintln(os.Stderr, "cleanup:", err)
	}
	if built != nil {
		for _, ref := range []string{built.tag, built.base} {
			if _, err := docker(time.Minute, nil, "rmi", "-f", ref); err != nil {
				fmt.Fprintln(os.Stderr, "cleanup:", err)
			}
		}
		os.RemoveAll(built.workDir)
	}
	os.Exit(code)
}

// needImage skips the test when no Docker engine answers, and otherwise
// returns the image, built once.
func needImage(t *testing.T) *image {
	t.Helper()
	imageOnce.Do(func() {
		if runtime.GOOS != "linux" {
			skipWhy = "the image is linux/" + runtime.GOARCH + "; this is " + runtime.GOOS
			return
		}
		if _, err := exec.LookPath("docker"); err != nil {
			skipWhy = "no docker client in PATH"
			return
		}
		v, err := docker(20*time.Second, nil, "version", "--format", "{{.Server.Version}}")
		if err != nil || v == "" {
			skipWhy = fmt.Sprintf("no Docker engine answers `docker version`: %v", err)
			return
		}
		built, buildErr = buildImage(v)
	})
	if skipWhy != "" {
		t.Skip("skipped: " + skipWhy)
	}
	if buildErr != nil {
		t.Fatalf("building the image: %v", buildErr)
	}
	return built
}

// buildImage builds the binary, imports a base and builds the Dockerfile's
// runtime stage around the binary.
func buildImage(engine string) (*image, error) {
	start := time.Now()
	dir, err := os.MkdirTemp("", "meteorbench-dockertest-")
	if err != nil {
		return nil, err
	}
	im := &image{
		tag:     "meteorbench-dockertest:" + runID,
		base:    "meteorbench-dockertest-base:" + runID,
		workDir: dir,
	}
	ctxDir := filepath.Join(dir, "context")
	if err := os.Mkdir(ctxDir, 0o755); err != nil {
		return im, err
	}
	im.bin = filepath.Join(ctxDir, "meteorbench")

	// 1. The binary, as the Dockerfile's build stage makes it.
	root, _ := filepath.Abs(repoRoot)
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X github.com/meteorbench/meteorbench/internal/buildinfo.version=dockertest",
		"-o", im.bin, "./cmd/meteorbench")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		return im, fmt.Errorf("go build: %v: %s", err, out)
	}

	// 2. The base: what distroless/static:nonroot gives the runtime stage
	// that it uses (the nonroot user and group, a /tmp anyone may write),
	// imported under a name of this run only, so a real distroless image
	// on this machine is never shadowed and parallel runs do not collide.
	rootfs, err := baseRootFS()
	if err != nil {
		return im, err
	}
	if _, err := docker(time.Minute, rootfs, "import",
		"--change", "USER 65532:65532", "--change", "WORKDIR /home/nonroot",
		"--change", "LABEL "+label+"=1", "-", im.base); err != nil {
		return im, err
	}

	// 3. The real Dockerfile's runtime stage, taking the binary from the
	// context instead of the build stage.
	df, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		return im, err
	}
	stage, err := runtimeStage(string(df))
	if err != nil {
		return im, err
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte(stage), 0o644); err != nil {
		return im, err
	}
	if _, err := docker(3*time.Minute, nil, "build", "-q", "--pull=false",
		"--build-arg", "RUNTIME_BASE="+im.base, "--label", label+"=1",
		"-t", im.tag, ctxDir); err != nil {
		return im, err
	}
	fmt.Fprintf(os.Stderr, "dockertest: engine %s; built %s on %s in %v\n", engine, im.tag, im.base, time.Since(start).Round(time.Millisecond))
	return im, nil
}

var copyFromBuild = regexp.MustCompile(`^COPY\s+--from=build\s+(\S+)\s+(\S+)\s*$`)

// runtimeStage returns the Dockerfile's global ARGs and its last stage, with
// its one "COPY --from=build SRC DST" turned into "COPY meteorbench DST".
func runtimeStage(df string) (string, error) {
	lines := strings.Split(df, "\n")
	var global []string
	first, last := -1, -1
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			if first < 0 {
				first = i
			}
			last = i
		case "ARG":
			if first < 0 {
				global = append(global, l)
			}
		}
	}
	if last < 0 {
		return "", fmt.Errorf("Dockerfile: no FROM")
	}
	stage := append([]string(nil), lines[last:]...)
	copies := 0
	for i, l := range stage {
		if m := copyFromBuild.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			stage[i] = "COPY meteorbench " + m[2]
			copies++
		}
	}
	if copies != 1 {
		return "", fmt.Errorf("Dockerfile: the runtime stage has %d \"COPY --from=build SRC DST\" lines, want exactly 1 (the binary)", copies)
	}
	out := "# Generated by deploy/dockertest from the Dockerfile's runtime stage.\n" +
		strings.Join(global, "\n") + "\n" + strings.Join(stage, "\n")
	return out, nil
}

// baseRootFS is a tar of the minimal root file system the runtime stage
// needs: /etc/passwd and /etc/group naming the nonroot user (65532) that
// USER nonroot:nonroot resolves, /tmp with mode 1777 for the address file,
// and nonroot's home.
func baseRootFS() ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mod := time.Unix(0, 0)
	dir := func(name string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: mod})
	}
	file := func(name, body string) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: mod}); err != nil {
			return err
		}
		_, err := tw.Write([]byte(body))
		return err
	}
	steps := []func() error{
		func() error { return dir("etc", 0o755, 0) },
		func() error {
			return file("etc/passwd", "root:x:0:0:root:/root:/sbin/nologin\n"+
				"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"+
				"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")
		},
		func() error { return file("etc/group", "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n") },
		func() error { return dir("tmp", 0o1777, 0) },
		func() error { return dir("home", 0o755, 0) },
		func() error { return dir("home/nonroot", 0o700, 65532) },
		func() error { return dir("usr", 0o755, 0) },
		func() error { return dir("usr/local", 0o755, 0) },
		func() error { return dir("usr/local/bin", 0o755, 0) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// newNetwork creates a private bridge network for one test, removed at its end.
func newNetwork(t *testing.T) string {
	t.Helper()
	name := "meteorbench-dockertest-" + runID + "-" + strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-"))
	if _, err := docker(30*time.Second, nil, "network", "create", "--label", label+"=1", name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := docker(30*time.Second, nil, "network", "rm", name); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	return name
}

// inspect returns one docker inspect --format value.
func inspect(t *testing.T, container, format string) string {
	t.Helper()
	out, err := docker(20*time.Second, nil, "inspect", "--format", format, container)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// logs returns the container's output, for failure messages.
func logs(container string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, "docker", "logs", "--tail", "40", container).CombinedOutput()
	return strings.TrimSpace(string(out))
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
