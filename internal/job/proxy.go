package job

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/meteorbench/meteorbench/internal/cpuset"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/proxy"
)

// ProxyFlags are run's --proxy and --proxy-config as given (capacity and
// fit share them).
type ProxyFlags struct {
	Names  []string // --proxy: none, nginx, caddy, haproxy
	Config string   // --proxy-config FILE: the user's own template
}

// Apply sets cfg's proxies and their templates, checking what can be
// checked before anything runs: the names, the programs installed, and a
// --proxy-config with the proxy's own check (nginx -t, caddy validate,
// haproxy -c). cfg.Target must be set (a proxy goes in front of the own
// server only).
func (p ProxyFlags) Apply(ctx context.Context, cfg *plan.Config, changed func(string) bool) error {
	if !changed("proxy") && !changed("proxy-config") {
		return nil
	}
	if len(p.Names) == 0 {
		return errors.New("--proxy: no value")
	}
	var behind []string // the proxies, none left out
	for _, n := range p.Names {
		if n == proxy.None {
			continue
		}
		if _, err := proxy.Binary(n); err != nil {
			return err
		}
		behind = append(behind, n)
	}
	if !cfg.Target.IsZero() && len(behind) > 0 {
		return fmt.Errorf("--proxy %s starts a proxy in front of run's own server: with --target, point --target at your proxy and give --server-pid rest=PROXY+SERVER,grpc=PROXY+SERVER", behind[0])
	}
	cfg.Proxies = p.Names
	if p.Config == "" {
		return nil
	}
	if len(behind) != 1 {
		return errors.New("--proxy-config is one proxy's configuration: give --proxy with one of nginx, caddy, haproxy (and none)")
	}
	tmpl, err := proxy.Template(behind[0], p.Config)
	if err != nil {
		return err
	}
	if err := proxy.Check(ctx, behind[0], tmpl); err != nil {
		return err
	}
	cfg.ProxyTemplates = map[string]string{behind[0]: tmpl}
	return nil
}

// startProxies starts the proxies of cfg in front of its own server
// (already started: cfg.Target is its address), pinned to its CPUs, and
// makes the clients trust their certificates; stop ends them.
func startProxies(ctx context.Context, ui *console, cfg *plan.Config) (stop func(), err error) {
	var running []*proxy.Proxy
	stop = func() {
		for _, p := range running {
			p.Stop()
		}
	}
	workers := cfg.ServerCPUs
	if workers == 0 {
		if avail, err := cpuset.Available(); err == nil {
			workers = avail.Len()
		}
	}
	for _, name := range cfg.Proxies {
		if name == proxy.None {
			continue
		}
		tmpl, ok := cfg.ProxyTemplates[name]
		if !ok {
			if tmpl, err = proxy.Template(name, ""); err != nil {
				stop()
				return nil, err
			}
		}
		p, err := proxy.Start(ctx, name, tmpl, cfg.Target.All, cfg.ServerCPUList, workers)
		if err != nil {
			stop()
			return nil, err
		}
		running = append(running, p)
		if cfg.Behind == nil {
			cfg.Behind = map[string]plan.Behind{}
		}
		cfg.Behind[name] = plan.Behind{Addr: p.Addr, PID: p.PID()}
		trust(cfg, p)
		where := ""
		if cfg.ServerCPUList != "" {
			where = ", pinned to CPUs " + cfg.ServerCPUList
		}
		ui.note("started %s (pid %d) on %s, TLS, in front of the own server%s", name, p.PID(), p.Addr, where)
	}
	return stop, nil
}

// trust makes the clients trust proxy p's certificate, as well as those
// they trusted.
func trust(cfg *plan.Config, p *proxy.Proxy) {
	if cfg.TLSConfig == nil {
		cfg.TLSConfig = &tls.Config{RootCAs: p.CertPool}
		return
	}
	c := cfg.TLSConfig.Clone()
	if c.RootCAs == nil {
		c.RootCAs = p.CertPool
	} else {
		c.RootCAs = c.RootCAs.Clone()
		c.RootCAs.AddCert(p.Cert)
	}
	cfg.TLSConfig = c
}
