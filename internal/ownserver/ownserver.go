// Package ownserver is the server `run` and `capacity` start themselves
// without --target: `meteorbench serve` as a child process on loopback
// (package child), with a body limit that fits the run's largest upload,
// TLS with a self-signed certificate the load generator trusts when the
// run measures TLS, and the CPUs split between the server and the load
// generator when asked.
//
// Pinning the load generator changes this whole process (its CPU
// affinity), which a library should leave to main: Start does it because
// it must come after the child started (a child inherits the mask, and the
// server's CPUs would then be out of its reach), and only the run and
// capacity commands call it.
package ownserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/cpuset"
	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/child"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/proxy"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/target"
	"github.com/meteorbench/meteorbench/internal/tlsutil"
)

// StopGrace is how long the own server may take to drain at the end.
const StopGrace = 10 * time.Second

// Server is a running own server.
type Server struct {
	srv     *child.Server
	cleanup func()
}

// Start starts `meteorbench serve` (this executable) for cfg, which must
// have OwnServer set: it points cfg.Target at the child, makes the load
// generator trust the child's certificate when cfg measures TLS, and pins
// this process to cfg.ClientCPUList when the server is pinned
// (cfg.ServerCPUList). note is told what was done, one line each. A ctx
// cancelled during the start returns its error.
func Start(ctx context.Context, cfg *plan.Config, note func(format string, args ...any)) (*Server, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable to start the server: %w", err)
	}
	var env []string
	if cfg.Token != "" {
		env = append(env, server.TokenEnv+"="+cfg.Token)
	}
	s := &Server{cleanup: func() {}}
	args := Args(*cfg)
	stopPacket, err := startPacket(cfg, note) // packet.go
	if err != nil {
		return nil, err
	}
	if stopPacket != nil {
		s.cleanup = stopPacket
		args = append(args, "--netns", cfg.Packet.ServerNS())
	}
	var certFile string
	if len(cfg.TLS) > 0 || slices.Contains(cfg.Sweeps[call.SettingHTTPVersion], call.HTTP3) {
		dir, err := os.MkdirTemp("", "meteorbench-tls-*")
		if err != nil {
			s.cleanup()
			return nil, fmt.Errorf("--tls: %w", err)
		}
		prev := s.cleanup
		s.cleanup = func() { os.RemoveAll(dir); prev() }
		certFile = filepath.Join(dir, "cert.pem")
		// HTTP/3 is TLS: its cells trust the certificate as TLS cells do.
		modes := cfg.TLS
		if len(modes) == 0 {
			modes = []bool{false}
		}
		args = append(args, tlsArgs(modes, certFile, slices.ContainsFunc(cfg.Proxies, func(p string) bool { return p != proxy.None }))...)
	}
	s.srv, err = child.Start(ctx, exe, args, env)
	if err != nil {
		s.cleanup()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("start own server: %w", err)
	}
	cfg.Target = target.One(s.srv.Addr)
	if cfg.Profile {
		cfg.ServerPprof = target.One("http://" + s.srv.Addr + server.PprofProfilePath)
	}
	if certFile != "" {
		pool, err := tlsutil.CertPool(certFile)
		if err != nil {
			s.Stop(note)
			return nil, fmt.Errorf("own server's certificate: %w", err)
		}
		cfg.TLSConfig = &tls.Config{RootCAs: pool}
	}
	note("started own server (meteorbench serve) on %s", s.srv.Addr)
	if cfg.Packet != nil {
		note("packet link: the load generator in network namespace %s reaches the server in %s at %s, port %s, through TUN devices and the forwarder (TCP %s)",
			cfg.Packet.ClientNS(), cfg.Packet.ServerNS(), link.ServerIP, portOf(s.srv.Addr), link.Congestion)
		if err := checkLinks(ctx, cfg, note); err != nil {
			s.Stop(note)
			return nil, err
		}
	}
	if cfg.ClientCPUList != "" {
		client, err := cpuset.Parse(cfg.ClientCPUList)
		if err == nil {
			err = cpuset.Pin(client)
		}
		if err != nil {
			s.Stop(note)
			return nil, fmt.Errorf("--server-cpus: pin the load generator to CPUs %s: %w", cfg.ClientCPUList, err)
		}
		note("own server pinned to CPUs %s, load generator to CPUs %s (GOMAXPROCS %d)", cfg.ServerCPUList, cfg.ClientCPUList, runtime.GOMAXPROCS(0))
	}
	return s, nil
}

// Stop ends the own server, within StopGrace; note is told of a server
// that did not end well.
func (s *Server) Stop(note func(format string, args ...any)) {
	if err := s.srv.Stop(StopGrace); err != nil {
		note("own server: %v", err)
	}
	s.cleanup()
}

// tlsArgs are the serve flags of a TLS own server: a self-signed
// certificate written to certFile, and plaintext too when the run
// measures both, or has proxies (which talk to the server in plaintext).
func tlsArgs(modes []bool, certFile string, proxied bool) []string {
	args := []string{"--tls-self-signed", "--tls-cert-out", certFile}
	if slices.Contains(modes, false) || proxied {
		args = append(args, "--tls-allow-plaintext")
	}
	return args
}

// builtinProxiesOnly reports whether cfg puts the own server behind a
// proxy, each with deploy/proxy's configuration (no --proxy-config).
func builtinProxiesOnly(cfg plan.Config) bool {
	behind := false
	for _, p := range cfg.Proxies {
		if p == proxy.None {
			continue
		}
		if _, own := cfg.ProxyTemplates[p]; own {
			return false
		}
		behind = true
	}
	return behind
}

// Args is the command line of the own server (before its TLS flags and
// address file). Its body limit is the server's default unless the run
// uploads more: then it is raised to fit the largest upload (JSON, the
// larger encoding), so the payload sweep measures the protocols, not the
// limit. Against --target the server's own limit stands, and an upload
// above it is an error class (http-413, grpc-ResourceExhausted) like any
// other.
func Args(cfg plan.Config) []string {
	args := []string{"serve", "--addr", "127.0.0.1:0"}
	if cfg.Profile {
		args = append(args, "--pprof") // on loopback only
	}
	if cfg.ServerCPUList != "" {
		args = append(args, "--cpus", cfg.ServerCPUList)
	}
	if builtinProxiesOnly(cfg) {
		// deploy/proxy's configs keep gRPC on upstream connections of
		// its own: gRPC behind them is grpc-go's native transport, as
		// direct, not the pooled-connection path (serve's help).
		args = append(args, "--proxied-grpc-native")
	}
	if cfg.Payload != nil {
		args = append(args, cfg.Payload.Args()...)
	}
	if b := UploadBound(cfg); b > server.DefaultMaxBody {
		args = append(args, "--max-body", strconv.FormatInt(b, 10))
	}
	return args
}

// JSONRecordBound bounds one record's JSON in an upload, comma included:
// the embedded records encode to about 220 B each (the longest under 400),
// and a generated record only has a longer id.
const JSONRecordBound = 512

// UploadBound is an upper bound of the largest request body cfg sends, in
// bytes: 0 without the post scenario.
func UploadBound(cfg plan.Config) int64 {
	if !slices.Contains(cfg.Scenarios, api.Post) && cfg.Mix.Rate(api.Post) == 0 {
		return 0
	}
	n, bound := api.DefaultRecords, int64(JSONRecordBound)
	if cfg.Payload != nil { // the sample's items, its longest item's JSON
		n, bound = cfg.Payload.Len(), int64(cfg.Payload.MaxItemJSON()+1)
	}
	if len(cfg.Records) > 0 {
		n = slices.Max(cfg.Records)
	}
	return int64(n)*bound + 1<<20 // plus room for the brackets and the headers
}
