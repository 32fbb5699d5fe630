package plan

import (
	"errors"
	"fmt"
	"slices"

	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/proxy"
)

// Behind is a proxy running in front of the own server: its public
// address (TLS, trusted through TLSConfig's roots) and its main process,
// whose CPU, with its children's, counts as the server's.
type Behind struct {
	Addr string
	PID  int
}

// proxies are the proxies swept: Proxies, or none.
func (c Config) proxies() []string {
	if len(c.Proxies) == 0 {
		return []string{proxy.None}
	}
	return c.Proxies
}

// validateProxies checks the proxy sweep: known names, each once, only in
// front of the own server, and TLS (which ends at the proxy) not swept
// with a proxy.
func (c Config) validateProxies() error {
	ps := c.proxies()
	for _, p := range ps {
		if p != proxy.None && !slices.Contains(proxy.Names(), p) {
			return fmt.Errorf("proxy %q: unknown (want %s)", p, format.Names(append([]string{proxy.None}, proxy.Names()...)))
		}
	}
	if err := unique("proxy", ps); err != nil {
		return err
	}
	if slices.Equal(ps, []string{proxy.None}) {
		return nil
	}
	switch {
	case !c.OwnServer:
		return errors.New("proxy: run starts a proxy in front of its own server only: drop --target (your own proxy: --target at it, --server-pid rest=PROXY+SERVER,grpc=...)")
	case c.Endpoints != nil:
		return errors.New("proxy: your own endpoints are not run's own server: drop --proxy")
	case len(c.TLS) == 2:
		return errors.New("proxy: a proxy's cells are over TLS, which ends at the proxy: sweep --tls without --proxy")
	}
	return nil
}
