// Package tlsutil holds the TLS pieces shared by the server and the load
// generator: an ephemeral self-signed certificate and its fingerprint.
package tlsutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/meteorbench/meteorbench/internal/output"
)

// SelfSignedValidity is how long a self-signed certificate is valid. It is
// made afresh at every start, so this only bounds a very long-running server.
const SelfSignedValidity = 365 * 24 * time.Hour

// DefaultHosts are always in a self-signed certificate.
var DefaultHosts = []string{"localhost", "127.0.0.1", "::1"}

// SelfSigned makes an ECDSA P-256 certificate for DefaultHosts and hosts
// (names or IP addresses; empty and unspecified addresses are skipped). It
// returns the certificate for a tls.Config and its PEM encoding, for clients
// to trust. The certificate is its own issuer and not a CA: clients trust it
// as given (curl --cacert, grpcurl -cacert, run --tls-ca).
func SelfSigned(hosts ...string) (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "meteorbench serve (self-signed)"},
		NotBefore:             now.Add(-time.Hour), // tolerate clock skew
		NotAfter:              now.Add(SelfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range slices.Concat(DefaultHosts, hosts) {
		h = strings.Trim(h, "[]")
		if ip, err := netip.ParseAddr(h); err == nil {
			if ip.IsUnspecified() || slices.ContainsFunc(tmpl.IPAddresses, func(x net.IP) bool { return x.Equal(ip.AsSlice()) }) {
				continue
			}
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip.AsSlice())
			continue
		}
		if h != "" && !slices.Contains(tmpl.DNSNames, h) {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, certPEM, nil
}

// Fingerprint is the SHA-256 of a DER certificate as colon-separated
// upper-case hex ("AB:CD:..."), as openssl x509 -fingerprint -sha256 and
// browsers show it.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}

// CertPool reads PEM certificates from a file into a pool.
func CertPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no PEM certificate found", path)
	}
	return pool, nil
}

// WritePEM writes a certificate's PEM to path (mode 0644: it is public),
// atomically, so a client polling for the file never reads half of it.
func WritePEM(path string, certPEM []byte) error {
	if len(certPEM) == 0 {
		return errors.New("tlsutil: no certificate")
	}
	return output.WriteFile(path, certPEM, 0o644)
}

// KeyPEM is the PEM encoding (PKCS #8) of a certificate's private key, for
// a server that reads its key from a file (a proxy run --proxy starts).
func KeyPEM(cert tls.Certificate) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
