package tlsutil

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

func TestSelfSigned(t *testing.T) {
	cert, certPEM, err := SelfSigned("bench.example", "0.0.0.0", "192.0.2.7", "127.0.0.1", "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cert.pem")
	if err := WritePEM(path, certPEM); err != nil {
		t.Fatal(err)
	}
	pool, err := CertPool(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"localhost", "127.0.0.1", "::1", "bench.example", "192.0.2.7"} {
		if _, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool}); err != nil {
			t.Errorf("verify for %s: %v", host, err)
		}
	}
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: pool}); err == nil {
		t.Error("verified for a host not in the certificate")
	}
	if len(cert.Leaf.IPAddresses) != 3 { // 127.0.0.1, ::1, 192.0.2.7: no duplicate, no 0.0.0.0
		t.Errorf("IP SANs %v", cert.Leaf.IPAddresses)
	}
	fp := Fingerprint(cert.Certificate[0])
	if !regexp.MustCompile(`^([0-9A-F]{2}:){31}[0-9A-F]{2}$`).MatchString(fp) {
		t.Errorf("fingerprint %q", fp)
	}
}

func TestCertPoolErrors(t *testing.T) {
	if _, err := CertPool(filepath.Join(t.TempDir(), "missing.pem")); err == nil {
		t.Error("missing file: no error")
	}
	junk := filepath.Join(t.TempDir(), "junk.pem")
	os.WriteFile(junk, []byte("not a certificate"), 0o644)
	if _, err := CertPool(junk); err == nil {
		t.Error("junk file: no error")
	}
}
