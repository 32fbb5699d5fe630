// Package proxy runs a real reverse proxy (Debian's nginx, Caddy or
// HAProxy) in front of run's own server, configured from deploy/proxy's
// files as a VPS user writes them: TLS ends at the proxy's public port
// (a certificate made at start, tlsutil), REST, gRPC-Web and Connect go to
// the server as HTTP/1.1, gRPC over h2c. The proxy runs in the
// foreground, pinned to the server's CPUs when the server is (taskset), its
// pid file, log and temporary files in a folder of its own, removed at
// Stop.
package proxy

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/template"
	"time"

	"github.com/meteorbench/meteorbench/deploy/proxy"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/tlsutil"
)

// None is --proxy's name of no proxy: the calls go to the server.
const None = "none"

// A kind is one proxy meteorbench knows how to run.
type kind struct {
	name    string
	binary  string // on PATH
	deb     string // the Debian package that has it
	file    string // its configuration in deploy/proxy
	logFile string // where its own messages go, in its folder
	// run and check are its command lines for the configuration at conf
	// in folder dir: in the foreground, and checking the configuration
	// only.
	run, check func(conf, dir string) []string
}

var kinds = []kind{
	{
		name: "nginx", binary: "nginx", deb: "nginx", file: "nginx.conf", logFile: "error.log",
		run: func(conf, dir string) []string {
			return []string{"-c", conf, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-g", "daemon off;"}
		},
		check: func(conf, dir string) []string {
			return []string{"-t", "-q", "-c", conf, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-g", "daemon off;"}
		},
	},
	{
		name: "caddy", binary: "caddy", deb: "caddy", file: "Caddyfile", logFile: "output.log",
		run:   func(conf, _ string) []string { return []string{"run", "--config", conf, "--adapter", "caddyfile"} },
		check: func(conf, _ string) []string { return []string{"validate", "--config", conf, "--adapter", "caddyfile"} },
	},
	{
		name: "haproxy", binary: "haproxy", deb: "haproxy", file: "haproxy.cfg", logFile: "output.log",
		run:   func(conf, _ string) []string { return []string{"-db", "-f", conf} },
		check: func(conf, _ string) []string { return []string{"-c", "-q", "-f", conf} },
	},
}

// Names are the proxies run --proxy knows, None not included.
func Names() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.name
	}
	return out
}

func kindOf(name string) (kind, error) {
	for _, k := range kinds {
		if k.name == name {
			return k, nil
		}
	}
	return kind{}, fmt.Errorf("--proxy %q: unknown proxy (want %s)", name, format.Names(append([]string{None}, Names()...)))
}

// ErrNotStarted is the error (wrapped) of a proxy that could not be
// started or whose configuration does not hold: the flags' to fix.
var ErrNotStarted = errors.New("proxy not started")

// Binary is the path of the proxy's program; not installed is an error
// naming the Debian package.
func Binary(name string) (string, error) {
	k, err := kindOf(name)
	if err != nil {
		return "", err
	}
	path, err := exec.LookPath(k.binary)
	if err != nil {
		return "", fmt.Errorf("--proxy %s: %s is not installed (Debian: apt-get install %s): %w", name, k.binary, k.deb, ErrNotStarted)
	}
	return path, nil
}

// Template is the configuration template of proxy name: the file at path
// (--proxy-config), or deploy/proxy's when path is "".
func Template(name, path string) (string, error) {
	k, err := kindOf(name)
	if err != nil {
		return "", err
	}
	if path == "" {
		b, err := fs.ReadFile(proxy.Files, k.file)
		return string(b), err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--proxy-config: %w", err)
	}
	text := string(b)
	if !strings.Contains(text, "{{.Public}}") || !strings.Contains(text, "{{.Backend}}") {
		return "", fmt.Errorf("--proxy-config %s: no {{.Public}} or no {{.Backend}} field: run fills in the proxy's public address and the server's (see deploy/proxy/%s)", path, k.file)
	}
	return text, nil
}

// Fields are what a configuration template is filled with.
type Fields struct {
	Public  string // the proxy's public address, host:port
	Host    string // Public's host
	Backend string // the server's address, host:port
	Cert    string // the certificate's PEM file
	Key     string // its key's PEM file
	CertKey string // both in one PEM file (HAProxy's crt)
	Dir     string // the proxy's own folder: pid file, logs, temporary files
	Workers int    // processes or threads: the CPUs the proxy may use
}

// Proxy is a running proxy.
type Proxy struct {
	Name string
	Addr string // its public address, TLS
	// Cert is its certificate (self-signed), and CertPool a pool that
	// trusts it.
	Cert     *x509.Certificate
	CertPool *x509.CertPool
	cmd      *exec.Cmd
	dir      string
	log      string
	exited   chan struct{}
	waitErr  error
}

// PID is the proxy's main process (nginx's master, whose workers are its
// children).
func (p *Proxy) PID() int { return p.cmd.Process.Pid }

// StartTimeout bounds a proxy's start: until its public port accepts.
const StartTimeout = 15 * time.Second

// Start runs proxy name from template tmpl in front of backend, pinned to
// cpus (a cpuset list; "" for no pinning) with workers processes or
// threads. A proxy that does not start is an error (ErrNotStarted) with
// the last line of its log.
func Start(ctx context.Context, name, tmpl, backend, cpus string, workers int) (*Proxy, error) {
	k, err := kindOf(name)
	if err != nil {
		return nil, err
	}
	bin, err := Binary(name)
	if err != nil {
		return nil, err
	}
	public, err := freeAddr()
	if err != nil {
		return nil, err
	}
	dir, cert, conf, err := prepare(k, tmpl, public, backend, workers)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	p := &Proxy{Name: name, Addr: public, Cert: cert, CertPool: pool, dir: dir, log: filepath.Join(dir, k.logFile), exited: make(chan struct{})}
	args := k.run(conf, dir)
	path := bin
	if cpus != "" {
		path, args = "taskset", append([]string{"-c", cpus, bin}, args...)
	}
	out, err := os.Create(filepath.Join(dir, "output.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer out.Close()
	p.cmd = exec.Command(path, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir, "HOME="+dir) // Caddy's storage
	p.cmd.SysProcAttr = sysProcAttr()
	if err := p.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("--proxy %s: %w: %w", name, err, ErrNotStarted)
	}
	go func() { p.waitErr = p.cmd.Wait(); close(p.exited) }()
	if err := p.await(ctx); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// prepare makes the proxy's folder, its certificate and its configuration
// from tmpl: the folder, a pool trusting the certificate, and the
// configuration's path.
func prepare(k kind, tmpl, public, backend string, workers int) (dir string, cert *x509.Certificate, conf string, err error) {
	t, err := template.New(k.file).Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return "", nil, "", fmt.Errorf("--proxy %s: configuration template: %w: %w", k.name, err, ErrNotStarted)
	}
	if dir, err = os.MkdirTemp("", "meteorbench-"+k.name+"-*"); err != nil {
		return "", nil, "", err
	}
	fail := func(err error) (string, *x509.Certificate, string, error) {
		os.RemoveAll(dir)
		return "", nil, "", err
	}
	// nginx's workers run as nobody when it starts as root: they must
	// reach the folder (their temporary files are made by the master).
	if err := os.Chmod(dir, 0o755); err != nil {
		return fail(err)
	}
	host, _, _ := net.SplitHostPort(public)
	tc, certPEM, err := tlsutil.SelfSigned(host)
	if err != nil {
		return fail(err)
	}
	keyPEM, err := tlsutil.KeyPEM(tc)
	if err != nil {
		return fail(err)
	}
	f := Fields{
		Public: public, Host: host, Backend: backend, Dir: dir, Workers: max(workers, 1),
		Cert: filepath.Join(dir, "cert.pem"), Key: filepath.Join(dir, "key.pem"), CertKey: filepath.Join(dir, "cert-key.pem"),
	}
	for file, b := range map[string][]byte{f.Cert: certPEM, f.Key: keyPEM, f.CertKey: slices.Concat(certPEM, keyPEM)} {
		if err := os.WriteFile(file, b, 0o600); err != nil {
			return fail(err)
		}
	}
	var text bytes.Buffer
	if err := t.Execute(&text, f); err != nil {
		return fail(fmt.Errorf("--proxy %s: configuration template: %w: %w", k.name, err, ErrNotStarted))
	}
	conf = filepath.Join(dir, k.file)
	if err := os.WriteFile(conf, text.Bytes(), 0o644); err != nil {
		return fail(err)
	}
	return dir, tc.Leaf, conf, nil
}

// Check checks template tmpl of proxy name with the proxy's own check
// (nginx -t, caddy validate, haproxy -c), filled as Start fills it: a
// configuration that does not hold is an error (ErrNotStarted) with the
// proxy's last line about it.
func Check(ctx context.Context, name, tmpl string) error {
	k, err := kindOf(name)
	if err != nil {
		return err
	}
	bin, err := Binary(name)
	if err != nil {
		return err
	}
	dir, _, conf, err := prepare(k, tmpl, "127.0.0.1:1", "127.0.0.1:2", 1)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, k.check(conf, dir)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir, "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, k.logFile))
		return fmt.Errorf("--proxy-config: %s does not accept it: %s: %w", k.name, lastLine(slices.Concat(out, log), err), ErrNotStarted)
	}
	return nil
}

// await waits until the proxy's public port accepts connections; a proxy
// that exits first, or is not up within StartTimeout, is an error with the
// last line of its log.
func (p *Proxy) await(ctx context.Context) error {
	deadline := time.Now().Add(StartTimeout)
	for {
		c, err := net.DialTimeout("tcp", p.Addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("--proxy %s did not start: %s: %w", p.Name, lastLine(p.logs(), p.waitErr), ErrNotStarted)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("--proxy %s: not accepting on %s after %v: %s: %w", p.Name, p.Addr, StartTimeout, lastLine(p.logs(), nil), ErrNotStarted)
		}
	}
}

// logs are what the proxy wrote: its output, then its log file.
func (p *Proxy) logs() []byte {
	out, _ := os.ReadFile(filepath.Join(p.dir, "output.log"))
	if p.log != filepath.Join(p.dir, "output.log") {
		log, _ := os.ReadFile(p.log)
		out = append(out, log...)
	}
	return out
}

// lastLine is the last non-empty line of b, else err's text.
func lastLine(b []byte, err error) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	if err != nil {
		return err.Error()
	}
	return "no message"
}

// StopGrace is how long a proxy may take to end on SIGTERM before it is
// killed.
const StopGrace = 5 * time.Second

// Stop ends the proxy (SIGTERM to its process group, then SIGKILL after
// StopGrace) and removes its folder.
func (p *Proxy) Stop() {
	defer os.RemoveAll(p.dir)
	pgid := p.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(StopGrace):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.exited
	}
}

// freeAddr is a free TCP port on loopback, for the proxy to listen on.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
