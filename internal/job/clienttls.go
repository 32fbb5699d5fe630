package job

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/meteorbench/meteorbench/internal/flagvalue"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/tlsutil"
)

// ClientTLS is the load generator's TLS as run, capacity and check take
// it: --tls, --tls-ca, --tls-insecure.
type ClientTLS struct {
	Mode     flagvalue.TLSMode
	CA       string // a PEM file of roots to trust
	Insecure bool   // do not verify the server's certificate
}

// Apply checks the TLS options and sets the load generator's TLS sweep and
// client configuration (for target; the own server's is set by the job
// that starts it).
func (t ClientTLS) Apply(cfg *plan.Config, target string) error {
	cfg.TLS = t.Mode.Sweep()
	switch {
	case cfg.TLS == nil && (t.CA != "" || t.Insecure):
		return errors.New("--tls-ca and --tls-insecure need --tls")
	case t.CA != "" && t.Insecure:
		return errors.New("--tls-ca and --tls-insecure are exclusive: give one")
	case target == "" && (t.CA != "" || t.Insecure):
		return errors.New("--tls-ca and --tls-insecure are for --target: the own server's certificate is trusted automatically")
	case cfg.TLS == nil:
		return nil
	}
	tc := &tls.Config{InsecureSkipVerify: t.Insecure}
	if t.CA != "" {
		pool, err := tlsutil.CertPool(t.CA)
		if err != nil {
			return fmt.Errorf("--tls-ca: %w", err)
		}
		tc.RootCAs = pool
	}
	cfg.TLSConfig = tc
	return nil
}
