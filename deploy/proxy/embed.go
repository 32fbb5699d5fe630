// Package proxy holds the reverse proxy configurations meteorbench runs
// its own server behind (run --proxy), as files a user can copy: one per
// proxy, text/template fields ({{.Backend}}, ...) in place of the
// addresses and certificate (internal/proxy fills them).
package proxy

import "embed"

// Files are nginx.conf, Caddyfile and haproxy.cfg.
//
//go:embed nginx.conf Caddyfile haproxy.cfg
var Files embed.FS
