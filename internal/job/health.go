package job

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/meteorbench/meteorbench/internal/addrfile"
	"github.com/meteorbench/meteorbench/internal/flagvalue"
	"github.com/meteorbench/meteorbench/internal/server"
)

// HealthTarget is the address `meteorbench health` dials, and whether the
// server is TLS: the one in addrFile ("" for none) when it exists, else
// fallback's (--addr, $METEORBENCH_ADDR or the default); a wildcard or
// empty host means 127.0.0.1. A missing file is not an error (the server
// may not have started yet); an unreadable or malformed one is.
func HealthTarget(addrFile string, fallback func() (string, error)) (string, bool, error) {
	if addrFile != "" {
		v, isTLS, err := addrfile.Read(addrFile)
		switch {
		case err == nil:
			target, err := flagvalue.DialAddr(v)
			return target, isTLS, err
		case !errors.Is(err, fs.ErrNotExist):
			return "", false, fmt.Errorf("--addr-file: %w", err)
		}
	}
	v, err := fallback()
	if err != nil {
		return "", false, err
	}
	target, err := flagvalue.DialAddr(v)
	return target, false, err
}

// Health checks the server at target within timeout: GET /healthz and the
// gRPC health service, over TLS without verifying the certificate when
// useTLS (a liveness check of a local process: whose certificate it is
// does not matter, that it answers does). It writes one line to w; an
// unhealthy server is an error of one line.
func Health(ctx context.Context, target string, useTLS bool, timeout time.Duration, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var tc *tls.Config
	if useTLS {
		tc = &tls.Config{InsecureSkipVerify: true}
	}
	if err := server.CheckTLS(ctx, target, tc); err != nil {
		return fmt.Errorf("%s is not healthy: %s", target, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	fmt.Fprintf(w, "meteorbench health: %s is healthy (REST /healthz ok, gRPC SERVING)\n", target)
	return nil
}
